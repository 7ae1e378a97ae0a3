// callsite.cpp: a C++ function in a namespace and a class, for the
// symbolizer's tests (its mangled name, demangled; its line from DWARF).
#include <string>
#include <unistd.h>

namespace lockd {
class Server {
public:
	__attribute__((noinline)) std::string handle(int fd);
};

std::string Server::handle(int fd)
{
	char buf[256];
	ssize_t n = read(fd, buf, sizeof buf);
	return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}
} // namespace lockd

int main()
{
	lockd::Server s;
	return static_cast<int>(s.handle(0).size());
}
