// SPDX-License-Identifier: MIT
// tests/coroutines/asio_echo.cc — a real coroutine library under the plugins: asio's C++20
// awaitables (Debian's libasio-dev), a loopback echo server (an accept loop spawning one
// session coroutine per connection), 8 clients each sending 20 lines and reading them back,
// a coroutine that throws through co_await, timers and an `||` of two awaitables. Built with
// default=app (every function of this file in one group; asio's own, in system headers, in
// none): the program must work as without the plugin, and every run of every coroutine must
// be one balanced pair in the trace (asio_test.py). Exit 0 = the program's own checks passed.
#include <asio.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <cstdio>
#include <cstring>
#include <stdexcept>
using asio::awaitable; using asio::use_awaitable; using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

static int echoed, thrown;

awaitable<void> session(tcp::socket s)
{
    char buf[256];
    for (;;) {
        std::size_t n;
        try { n = co_await s.async_read_some(asio::buffer(buf), use_awaitable); }
        catch (const std::exception &) { co_return; }
        co_await asio::async_write(s, asio::buffer(buf, n), use_awaitable);
        echoed++;
    }
}

awaitable<void> listener(tcp::acceptor &a, int n)
{
    for (int i = 0; i < n; i++) {
        tcp::socket s = co_await a.async_accept(use_awaitable);
        asio::co_spawn(a.get_executor(), session(std::move(s)), asio::detached);
    }
}

awaitable<int> fails(int x)
{
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(1));
    co_await t.async_wait(use_awaitable);
    if (x) throw std::runtime_error("boom");
    co_return 1;
}

awaitable<void> client(unsigned short port, int k)
{
    auto ex = co_await asio::this_coro::executor;
    tcp::socket s(ex);
    co_await s.async_connect({asio::ip::address_v4::loopback(), port}, use_awaitable);
    char msg[64], back[64];
    for (int i = 0; i < 20; i++) {
        int len = std::snprintf(msg, sizeof msg, "client %d line %d", k, i);
        co_await asio::async_write(s, asio::buffer(msg, len), use_awaitable);
        co_await asio::async_read(s, asio::buffer(back, len), use_awaitable);
        if (std::memcmp(msg, back, len)) throw std::runtime_error("mismatch");
    }
    try { co_await fails(k & 1); } catch (const std::runtime_error &) { thrown++; }
    asio::steady_timer t(ex, std::chrono::milliseconds(2));
    co_await (t.async_wait(use_awaitable) || fails(0));
}

int main()
{
    asio::io_context io;
    tcp::acceptor a(io, {asio::ip::address_v4::loopback(), 0});
    unsigned short port = a.local_endpoint().port();
    asio::co_spawn(io, listener(a, 8), asio::detached);
    int done = 0;
    for (int k = 0; k < 8; k++)
        asio::co_spawn(io, client(port, k), [&](std::exception_ptr e) { if (!e) done++; });
    io.run();
    std::printf("done %d echoed %d thrown %d\n", done, echoed, thrown);
    return done == 8 && echoed == 160 && thrown == 4 ? 0 : 1;
}
