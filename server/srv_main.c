/*
 * srv_main.c - dnnsatd, the HTTP service: reads the settings (flags and
 * DNNSAT_* variables, srv_config.c), starts the server (srv_start.c),
 * prints where it listens, and waits for SIGTERM or SIGINT, on which it
 * shuts down cleanly (srv_stop).
 */
#include "srv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
main(int argc, char **argv)
{
	static struct srv s;
	struct dn_error err;
	sigset_t sigs;
	char readers[48];
	int sig = 0, rc;

	memset(&err, 0, sizeof err);
	rc = srv_config_parse(argc, argv, &s.cfg, &err);
	if (rc != 0) {
		if (rc < 0)
			fprintf(stderr, "dnnsatd: %s: %s\n", err.path, err.message);
		srv_config_free(&s.cfg);
		return rc < 0 ? 2 : 0;
	}
	/* every thread inherits the mask: only sigwait below sees these */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (srv_start(&s, &err) != 0) {
		fprintf(stderr, "dnnsatd: %s%s%s\n", err.path, err.path[0] ? ": " : "", err.message);
		srv_stop(&s);
		return 1;
	}
	snprintf(readers, sizeof readers, ", %d database readers", s.cfg.db_pool);
	srv_log("listening on http://%s%s%s:%d/ (cache: %s, %d solver workers, %d HTTP threads%s%s)",
	    strchr(s.cfg.host, ':') ? "[" : "", s.cfg.host, strchr(s.cfg.host, ':') ? "]" : "", s.cfg.port,
	    s.cfg.database_url ? "PostgreSQL" : "in memory", s.cfg.workers, s.cfg.http_threads,
	    s.readers ? readers : "", s.tokens ? ", bearer tokens required" : "");
	printf("dnnsatd: listening on http://%s:%d/  (API: http://%s:%d/v1/templates, "
	    "contract: http://%s:%d/openapi.json)\n", s.cfg.host, s.cfg.port, s.cfg.host, s.cfg.port, s.cfg.host,
	    s.cfg.port);
	fflush(stdout);
	while (sigwait(&sigs, &sig) != 0 || (sig != SIGTERM && sig != SIGINT))
		;
	srv_log("%s received: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	srv_stop(&s);
	srv_log("stopped");
	return 0;
}
