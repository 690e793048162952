// The Linux system headers that Swift's Glibc module does not export: epoll and eventfd.
// Empty on other systems. Used only by ListSyncTCP's epoll poller (Sources/ListSyncTCP/EpollPoller.swift).
#ifndef CLISTSYNC_LINUX_H
#define CLISTSYNC_LINUX_H
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
#endif
