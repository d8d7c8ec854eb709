/*
 * fds.c - leakgate test program for --track-fds (Valgrind 3.23+ writes
 * descriptor errors to the XML): one descriptor opened and never closed, one
 * closed twice. Descriptors 0-2 and those inherited from the parent are left
 * as they are (not findings). No memory leaks.
 *
 * Build: gcc -g -O0 -o fds fds.c
 * Expected with --track-fds=yes: FdNotClosed in open_and_forget (the open
 * line), FdBadClose in close_twice (the second close). Exit code: 0.
 */
#include <fcntl.h>
#include <unistd.h>

static int open_and_forget(void)
{
    int fd = open("/dev/null", O_RDONLY); /* @fd_open */
    return fd;
}

static void close_twice(void)
{
    int fd = open("/dev/null", O_RDONLY);
    close(fd);
    close(fd); /* @fd_close2 */
}

int main(void)
{
    (void)open_and_forget();
    close_twice();
    return 0;
}
