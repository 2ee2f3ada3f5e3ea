/*
 * srv_log.c - the service's clock and log line. srv_now is the monotonic
 * clock every deadline and duration is measured on; srv_log writes one
 * timestamped line (UTC, milliseconds) to stderr, where the access log and
 * state changes go. Kept apart from the HTTP glue so that the metrics and
 * the pool can use them without depending on libmicrohttpd's layer.
 */
#include "srv.h"
#include "dn_deadline.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

double
srv_now(void)
{
	return dn_deadline_now();       /* one monotonic clock for every deadline (as fs_now) */
}

void
srv_utc_stamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	    tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(ts.tv_nsec / 1000000) % 1000);
}

void
srv_log(const char *fmt, ...)
{
	char stamp[64], line[1024];
	va_list ap;

	srv_utc_stamp(stamp, sizeof stamp);
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s dnnsatd: %s\n", stamp, line);
}

