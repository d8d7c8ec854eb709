// inl.cpp - a leak through inlined functions, for the suppression tests.
// Build with optimisation so the helpers are inlined: g++ -g -O2 inl.cpp.
// Valgrind prints inner_alloc and middle as separate frames sharing the
// ip of outer_leak (their names are DWARF names, never mangled).
#include <cstdlib>
#include <cstring>

char *volatile keep;

static inline __attribute__((always_inline)) char *inner_alloc(int n) {
    char *p = static_cast<char *>(malloc(n)); /* @inl_alloc */
    memset(p, 1, n);
    return p;
}

static inline __attribute__((always_inline)) char *middle(int n) {
    return inner_alloc(n); /* @inl_middle */
}

__attribute__((noinline)) void outer_leak() {
    keep = middle(24); /* @inl_outer */
    keep = nullptr;
}

int main() {
    outer_leak(); /* @inl_main */
    return 0;
}
