/*
 * rt_error.cpp - leakgate test program: a std::runtime_error leaked by the
 * user's code, whose message string libstdc++ allocated.
 *
 * Build: g++ -g -O0 -o rt_error rt_error.cpp
 *   leak_error()  new std::runtime_error(100-char string), never deleted
 *                 -> definitely lost (the exception object, 16 bytes) and
 *                 indirectly lost (its string, allocated inside libstdc++'s
 *                 runtime_error constructor), both at the same line
 */
#include <cstring>
#include <stdexcept>
#include <string>

volatile char g_sink;

__attribute__((noinline)) void leak_error()
{
    auto *e = new std::runtime_error(std::string(100, 'x')); /* @rt_error */
    g_sink = e->what()[0];
    e = nullptr;
}

__attribute__((noinline)) void scrub_stack()
{
    volatile char buf[4096];
    std::memset((char *)buf, 0, sizeof buf);
    g_sink = buf[100];
}

int main()
{
    leak_error();
    scrub_stack();
    return 0;
}
