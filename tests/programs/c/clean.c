/*
 * clean.c - leakgate test program: allocates and frees everything.
 *
 * Build: gcc -g -O0 -o clean clean.c
 * Expected under Memcheck: no errors, no leaks. Exit code: 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *bufs[4];
    for (int i = 0; i < 4; i++) {
        bufs[i] = malloc(32);
        memset(bufs[i], 'a' + i, 31);
        bufs[i][31] = '\0';
    }
    size_t total = 0;
    for (int i = 0; i < 4; i++) {
        total += strlen(bufs[i]);
        free(bufs[i]);
    }
    printf("clean: %zu\n", total);
    return 0;
}
