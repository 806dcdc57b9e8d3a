/*
 * notify.h - systemd's service notification protocol (sd_notify), without
 * libsystemd: a datagram to the unix socket NOTIFY_SOCKET names.  With
 * `Type=notify` a unit is started once the service says READY=1, and with
 * `WatchdogSec=` systemd restarts it if WATCHDOG=1 stops coming (a hung
 * loop, not only a dead process).  Outside systemd (no NOTIFY_SOCKET)
 * every call is a cheap no-op.
 */
#ifndef FL_NOTIFY_H
#define FL_NOTIFY_H

#include <stdint.h>

/* Send state ("READY=1\nSTATUS=..."); 0, or -errno (ignored by callers). */
int notify_send(const char *state);

/* READY=1 with a one-line status. */
int notify_ready(const char *status);

/* STOPPING=1: a clean stop has begun. */
int notify_stopping(void);

/*
 * How often to send WATCHDOG=1 (half of WATCHDOG_USEC, when it is set for
 * this process), in ns; 0 when there is no watchdog.
 */
uint64_t notify_watchdog_every(void);

/* WATCHDOG=1 if the watchdog is on and half its period has passed. */
void notify_watchdog(void);

#endif
