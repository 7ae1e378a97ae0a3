/* msg_client HOST PORT MESSAGE: send MESSAGE in one write and close. */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: msg_client HOST PORT MESSAGE\n");
		return 2;
	}
	int fd = connect_to(argv[1], argv[2]);
	write_all(fd, argv[3], strlen(argv[3]));
	close(fd);
	return 0;
}
