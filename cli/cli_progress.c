/*
 * cli_progress.c - the progress bar of long CLI runs (cli_progress.h):
 *   [##########..........]  5/12  0:07  resnet @ v100-16gb
 * drawn on stderr with a carriage return, fitted to the terminal's width.
 */
#include "cli_progress.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
columns(void)
{
	struct winsize ws;

	if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

static void
draw(struct cli_progress *p)
{
	char bar[32], line[512];
	int width = 20, filled = p->total > 0 ? p->done * width / p->total : 0, n, cols = columns();
	long secs = (long)(now() - p->start);

	for (int i = 0; i < width; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[width] = '\0';
	n = snprintf(line, sizeof line, "[%s] %d/%d  %ld:%02ld  %s", bar, p->done, p->total, secs / 60, secs % 60,
	    p->item);
	if (n >= cols)
		line[cols - 1] = '\0';  /* one line: never wrap */
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	p->shown = 1;
	p->last = now();
}

void
cli_progress_start(struct cli_progress *p, int total)
{
	memset(p, 0, sizeof *p);
	p->on = isatty(2);
	p->total = total;
	p->start = now();
}

void
cli_progress_item(struct cli_progress *p, const char *label)
{
	snprintf(p->item, sizeof p->item, "%s", label);
	cli_progress_tick(p);
}

void
cli_progress_tick(struct cli_progress *p)
{
	double t;

	if (!p->on)
		return;
	t = now();
	if (t - p->start >= 1.0 && t - p->last >= 0.25)
		draw(p);
}

void
cli_progress_step(struct cli_progress *p)
{
	p->done++;
	if (p->on && p->shown)
		draw(p);
}

void
cli_progress_clear(struct cli_progress *p)
{
	if (p->on && p->shown) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	p->shown = 0;
}
