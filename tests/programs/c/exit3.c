/*
 * exit3.c - leakgate test program: clean (no errors, no leaks) but exits
 * with status 3, to check that the wrapped program's exit code is reported.
 *
 * Build: gcc -g -O0 -o exit3 exit3.c
 */
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *p = malloc(8);
    strcpy(p, "exit3");
    free(p);
    return 3;
}
