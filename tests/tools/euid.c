/* euid: prints "uid=N euid=N" of the running process. Built static, so
 * that it runs in a container image without a C library (busybox): the
 * podman tests make it setuid root in an image and run it as a user, to
 * see that the view honours set-user-ID (a nosuid mount would not). */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
	return 0;
}
