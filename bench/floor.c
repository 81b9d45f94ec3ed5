/* The floor of an open-model HTTP/1.1 sender on this machine (issue 36): the least CPU any
 * generator can spend per request here when it sends at a fixed rate over keep-alive connections.
 * It does only what cannot be avoided: once per tick it wakes, writes each request that fell due
 * (one write(2) each, a fixed GET), reads what has arrived (epoll with a zero timeout, read(2)
 * per ready socket) and sleeps to the next tick. No latency is recorded, no request is rendered,
 * no response parsed: whatever a real generator spends above this is its own; what this spends
 * is the kernel's (the loopback delivery into the server, the wake-ups) and cannot be
 * engineered away by the generator. bench/sender-floor.sh runs it beside `ceiling load`.
 *
 * Usage: floor PORT RATE SECONDS CONNECTIONS TICK_US   (prints the requests it sent) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: floor PORT RATE SECONDS CONNECTIONS TICK_US\n");
        return 2;
    }
    int port = atoi(argv[1]), conns = atoi(argv[4]);
    double rate = atof(argv[2]), secs = atof(argv[3]);
    uint64_t tick = (uint64_t)atoll(argv[5]) * 1000ull;
    if (port <= 0 || rate <= 0 || secs <= 0 || conns <= 0 || conns > 4096 || tick == 0) {
        fprintf(stderr, "floor: bad argument\n");
        return 2;
    }
    static const char req[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: floor\r\n\r\n";
    int *fd = calloc((size_t)conns, sizeof(int));
    int ep = epoll_create1(0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    for (int i = 0; i < conns; i++) {
        fd[i] = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd[i], (struct sockaddr *)&a, sizeof a) != 0) {
            perror("floor: connect");
            return 1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &ev);
    }
    double interval = 1e9 / rate;
    uint64_t start = now_ns(), end = start + (uint64_t)(secs * 1e9);
    double next = (double)start;
    uint64_t sent = 0;
    char buf[65536];
    struct epoll_event evs[256];
    for (;;) {
        uint64_t t = now_ns();
        if (t >= end)
            break;
        while (next <= (double)t) {
            int c = (int)(sent % (uint64_t)conns);
            if (write(fd[c], req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
                perror("floor: write");
                return 1;
            }
            sent++;
            next += interval;
        }
        int n;
        while ((n = epoll_wait(ep, evs, 256, 0)) > 0)
            for (int k = 0; k < n; k++)
                if (read(fd[evs[k].data.u32], buf, sizeof buf) <= 0) {
                    fprintf(stderr, "floor: connection closed\n");
                    return 1;
                }
        /* sleep to the next tick boundary */
        uint64_t wake = start + ((now_ns() - start) / tick + 1) * tick;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000ull),
                              .tv_nsec = (long)(wake % 1000000000ull)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    printf("%llu\n", (unsigned long long)sent);
    return 0;
}
