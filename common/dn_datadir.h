/*
 * dn_datadir.h - where the programs find the files they read at run time:
 * the data directory (devices.json, templates/, the API's JSON Schemas) and
 * the dashboard's web directory. `make install` puts them under
 * $(pkgdatadir) as schemas/ and web/, the same layout as the source tree,
 * and the build passes $(pkgdatadir) as DNNSAT_PKGDATADIR; no source path is
 * compiled into a program.
 */
#ifndef DN_DATADIR_H
#define DN_DATADIR_H

enum dn_data_kind {
	DN_DATA_SCHEMAS,	/* devices.json, templates/, api/: $DNNSAT_DATA_DIR */
	DN_DATA_WEB		/* the dashboard: $DNNSAT_WEB_DIR */
};

/* The directory of `kind`, first found of:
 *   1. its environment variable (DNNSAT_DATA_DIR / DNNSAT_WEB_DIR) when set
 *      and not empty: read at every call, so a test may set it at run time;
 *   2. <directory of the running program>/schemas or /web, when that
 *      directory's schemas/devices.json exists: a program run uninstalled
 *      from a build in the source tree (./dnnsatd, scripts/run.sh);
 *   3. X/DNNSAT_PKGDATADIR/schemas or /web when the program sits in
 *      X/DNNSAT_BINDIR and that holds schemas/devices.json: an install tree
 *      copied whole under X (`make install DESTDIR=X`, a package root);
 *   4. DNNSAT_PKGDATADIR/schemas or /web: the installed copy.
 * Steps 2 to 4 are resolved once per process (thread-safe). Never NULL;
 * the string is the environment's or static. */
const char *dn_data_dir(enum dn_data_kind kind);

#endif
