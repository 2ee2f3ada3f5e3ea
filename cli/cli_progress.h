/*
 * cli_progress.h - a progress bar on stderr for long CLI runs: items done
 * out of the total, the elapsed time and the current item, redrawn in
 * place at most a few times a second. Only when stderr is a terminal, and
 * only once a run has lasted a second; otherwise every call is a no-op.
 */
#ifndef DN_CLI_PROGRESS_H
#define DN_CLI_PROGRESS_H

struct cli_progress {
	int on;                 /* stderr is a terminal */
	int shown;              /* a bar is on the screen now */
	int done, total;
	double start, last;     /* monotonic seconds: the run's start, the last draw */
	char item[160];
};

void cli_progress_start(struct cli_progress *p, int total);
/* A new current item (its label is copied). */
void cli_progress_item(struct cli_progress *p, const char *label);
/* Redraws when due; call it often from long work. */
void cli_progress_tick(struct cli_progress *p);
/* One more item done. */
void cli_progress_step(struct cli_progress *p);
/* Erases the bar (before other output to stderr, and at the end); the
 * next tick draws it again. */
void cli_progress_clear(struct cli_progress *p);

#endif
