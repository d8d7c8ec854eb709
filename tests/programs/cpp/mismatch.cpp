/*
 * mismatch.cpp - leakgate test program: new[] released with scalar delete.
 *
 * Build: g++ -g -O0 -o mismatch mismatch.cpp
 * Expected under Memcheck: one MismatchedFree error at the marked line
 * (an `@` followed by a name, see tests/programs/README.md); no leaks.
 * Exit code: 0.
 */
#include <cstdio>

__attribute__((noinline)) void mismatched_free()
{
    int *a = new int[10];
    for (int i = 0; i < 10; i++)
        a[i] = i;
    std::printf("mismatch: %d\n", a[9]);
    delete a; /* @mismatched */
}

int main()
{
    mismatched_free();
    return 0;
}
