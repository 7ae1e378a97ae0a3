/* random_bytes: 16 bytes from getrandom(2) and 16 from /dev/urandom. */
#include <sys/random.h>
#include "common.h"

static void hex(const char *label, const unsigned char *b)
{
	printf("%s=", label);
	for (int i = 0; i < 16; i++)
		printf("%02x", b[i]);
	printf("\n");
}

int main(void)
{
	unsigned char b[16];
	if (getrandom(b, sizeof b, 0) != sizeof b)
		die("getrandom");
	hex("getrandom", b);
	FILE *f = fopen("/dev/urandom", "r");
	if (!f || fread(b, 1, sizeof b, f) != sizeof b)
		die("/dev/urandom");
	fclose(f);
	hex("urandom", b);
	return 0;
}
