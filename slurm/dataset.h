/* SPDX-License-Identifier: MIT */
/*
 * This file declares what a job's dataset list means, one definition for
 * every place that reads one (`mountctl job`, the SPANK plugin through
 * it, the Prolog): the grammar of `--dataset=` and of the `dataset=` word
 * of `--comment`, the mount names given to the images, the site's
 * configuration (/etc/squashcache/slurm.conf) and its option policy.
 *
 * Nothing here touches the file system but ds_conf_read(), which reads
 * the site's file: the node-side work is in slurm/job*.c.  This is the
 * one parser of the site's file: `mountctl job` and the SPANK plugin
 * (which links this file) call it, the shell hooks ask `mountctl job
 * config` and `mountctl job name`.
 *
 * The list grammar:
 *
 *   LIST := ITEM (',' ITEM)*
 *   ITEM := PATH [':' OPT (',' OPT)*]  an image and its options
 *         | OPT                         one more option of the image before
 *   OPT  := NAME ['=' VALUE]            NAME is [a-z_]+
 *
 * An item is an option when an image came before it and it is a bare
 * option name or starts with "NAME=", so "/d/a.sqfs:ram=1G,cache=2G,/d/b.sqfs"
 * is two images.  A backslash takes the next character literally: a path
 * holding ',', ':' or '\' writes it "\,", "\:", "\\" (in --comment also
 * "\ " for a space).  A file named like an option is written "./ram=1G".
 *
 * Mount names: the image's file name less .sqfs, .squashfs, .sqsh, .img or
 * .sif; a character outside [A-Za-z0-9._-] becomes '_', a leading '.'
 * becomes '_', an empty name is "dataset"; the second image of a name gets
 * NAME-2, the third NAME-3, so two images with one file name get distinct
 * mount points.
 */
#ifndef SQC_SLURM_DATASET_H
#define SQC_SLURM_DATASET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define DS_MAX_IMAGES 16 /* images in one job */
#define DS_NAME_MAX 64 /* mount name, with its NUL */
#define DS_OPTS_MAX 1024 /* an option list, with its NUL */
#define DS_CONF_FILE "/etc/squashcache/slurm.conf"
#define DS_KEEP_SOCKET "/run/squashcache/keeper.sock" /* = KEEP_SOCKET */
#define DS_DEFAULT_TIMEOUT_S 30 /* the Prolog's budget for all mounts */
/* Options users may set unless the site says otherwise (user_options=). */
#define DS_USER_OPTIONS                                                  \
	"ram,cache,meta,warm,stage,threads,workers,readahead,statahead," \
	"statahead_wait,direct_io,no_uring,no_splice,stage_cached,offset"

/* One image of a job. */
struct ds_image {
	char path[PATH_MAX]; /* as written, escapes undone */
	char opts[DS_OPTS_MAX]; /* the user's options, ',' separated */
	char name[DS_NAME_MAX]; /* mount name, unique within the list */
};

/* A job's images, in the order given. */
struct ds_list {
	struct ds_image im[DS_MAX_IMAGES];
	unsigned int n;
};

/* The site's configuration: /etc/squashcache/slurm.conf, KEY=VALUE. */
struct ds_conf {
	char base[PATH_MAX]; /* mounts under BASE/squashcache/ */
	char options[DS_OPTS_MAX]; /* before the user's options */
	char force_options[DS_OPTS_MAX]; /* after them: they win */
	char user_options[DS_OPTS_MAX]; /* option names users may set */
	char allow[4096]; /* allowed image prefixes, ':' separated */
	char mountctl[PATH_MAX]; /* the one the plugin and the hooks run */
	unsigned int timeout_s; /* the Prolog's budget, seconds */
	bool prolog_spank; /* the Prolog also reads SPANK_DATASET */
	char keep[24]; /* the node's keeper budget, a size or "N%"; "0": off */
	char keep_min_available[24]; /* its --min-available; "": its own */
	char keep_socket[108]; /* its socket, DS_KEEP_SOCKET by default */
	/* Site images (with keep=): shared by every user who can open them,
	 * one copy per node that root makes (mountctl keeper --site). */
	char site[4096]; /* their prefixes, ':' separated; "": none */
	char site_keep[24]; /* the site copies' budget; "": keep='s */
	char site_seal[8]; /* "auto", "require" or "root" */
	char site_roots[PATH_MAX]; /* "HEX PATH" lines, root's; "": none */
};

/**
 * ds_conf_keeps() - Does the site keep staged copies between jobs?
 * @c: the site's configuration
 *
 * Return: true if keep= is a size other than zero; every job mount then
 * has the option keep.  Context: any thread.
 */
bool ds_conf_keeps(const struct ds_conf *c);

/**
 * ds_conf_default() - The configuration with no file.
 * @c: filled in: base /dev/shm, no options, DS_USER_OPTIONS, no allow
 *     list, timeout DS_DEFAULT_TIMEOUT_S, keep 0 (off), DS_KEEP_SOCKET
 */
void ds_conf_default(struct ds_conf *c);

/**
 * ds_conf_set() - Apply one "KEY=VALUE" setting.
 * @c: configuration
 * @kv: the setting; blanks around it are ignored
 * @why: set to the reason on failure
 * @cap: its capacity
 *
 * Keys: base, options, force_options, user_options, allow, mountctl,
 * timeout, prolog_spank, keep, keep_min_available, keep_socket, site,
 * site_keep, site_seal, site_roots; "state" is accepted and ignored
 * (older files).
 * Option lists are checked: no backslash, names [a-z_]+.
 *
 * Return: 0; -EINVAL for an unknown key or a bad value (@c unchanged).
 */
int ds_conf_set(struct ds_conf *c, const char *kv, char *why, size_t cap);

/**
 * ds_conf_line() - ds_conf_set() for one line of the file: blank lines
 * and lines starting with '#' are skipped.
 * @c: configuration
 * @line: the line, with or without '\n'
 * @why: as for ds_conf_set()
 * @cap: its capacity
 *
 * Return: as ds_conf_set().
 */
int ds_conf_line(struct ds_conf *c, const char *line, char *why, size_t cap);

/**
 * ds_conf_read() - Apply the lines of a config file, as ds_conf_line().
 * @c: configuration
 * @path: the file
 * @bad: called for each line that is refused (@no counts from 1; a line
 *       over 8190 bytes is one), or NULL; that line changes nothing
 * @arg: passed to @bad
 *
 * Return: 0; -EINVAL if a line was refused (the others are applied);
 * -errno if the file cannot be opened (-ENOENT: there is none) or read.
 */
int ds_conf_read(struct ds_conf *c, const char *path,
		 void (*bad)(const char *path, int no, const char *why,
			     void *arg),
		 void *arg);

/**
 * ds_conf_get() - The value of one key, as the file would write it.
 * @c: configuration
 * @key: one of the keys of ds_conf_set() ("state" has none)
 * @buf: destination
 * @cap: its capacity
 *
 * Return: 0; -ENOENT for an unknown key; -ENAMETOOLONG.
 */
int ds_conf_get(const struct ds_conf *c, const char *key, char *buf,
		size_t cap);

/**
 * ds_image_name() - The mount name of one image (see above), before a list
 * makes it unique: also the default mount point's name of `mountctl mount
 * IMAGE` and `mountctl acquire IMAGE`.
 * @path: the image's path
 * @out: DS_NAME_MAX bytes, set (never empty, never "." or "..": a
 *       leading '.' becomes '_')
 *
 * Context: cannot fail.
 */
void ds_image_name(const char *path, char *out);

/**
 * ds_list_name() - Give the images of @l their mount names (see above),
 * as ds_list_parse() does.
 * @l: the list, its paths set
 */
void ds_list_name(struct ds_list *l);

/**
 * ds_list_parse() - Parse a dataset list and name its images.
 * @text: the list (see the grammar above)
 * @out: the images
 * @why: set to the reason on failure
 * @cap: its capacity
 *
 * Return: 0 (an empty list gives n == 0); -EINVAL for a list that breaks
 * the grammar (an option before any image, an empty path, a bad option
 * name, a trailing backslash); -E2BIG for more than DS_MAX_IMAGES images.
 */
int ds_list_parse(const char *text, struct ds_list *out, char *why, size_t cap);

/**
 * ds_list_format() - Write a list back in the grammar, escaped, so that
 * ds_list_parse() gives the same paths and options.
 * @l: the list
 * @buf: destination
 * @cap: its capacity
 *
 * Return: 0; -ENAMETOOLONG if it does not fit.
 */
int ds_list_format(const struct ds_list *l, char *buf, size_t cap);

/**
 * ds_comment_list() - The dataset list in a job comment: the text of its
 * word "dataset=LIST" (words are separated by blanks; "\ " is a blank
 * inside a word).
 * @comment: the job's comment
 * @buf: destination for LIST, escapes kept
 * @cap: its capacity
 *
 * Return: 0; -ENOENT if the comment has no such word; -ENAMETOOLONG.
 */
int ds_comment_list(const char *comment, char *buf, size_t cap);

/**
 * ds_check_user_opts() - Is every option of @opts one users may set?
 * @c: the site's configuration (user_options=)
 * @opts: the user's options, ',' separated
 * @why: set to the reason, naming the option, on failure
 * @cap: its capacity
 *
 * allow_other, log, ctl, debug, hold and grace are refused whatever
 * user_options= says: they would share the mount with other users, write
 * a file or bind an address chosen by the user, or tie the mount's life
 * to a process.
 *
 * Return: 0; -EPERM for a refused option; -EINVAL for a malformed one.
 */
int ds_check_user_opts(const struct ds_conf *c, const char *opts, char *why,
		       size_t cap);

/**
 * ds_mount_opts() - The options a job's image is mounted with: the site's
 * options=, then the user's, then force_options= (the daemon takes the
 * last value of an option, so forced values hold), then keep=SOCKET if
 * the site keeps copies (ds_conf_keeps()).
 * @c: the site's configuration
 * @user: the user's options, already checked
 * @buf: destination
 * @cap: its capacity
 *
 * Return: 0; -ENAMETOOLONG.
 */
int ds_mount_opts(const struct ds_conf *c, const char *user, char *buf,
		  size_t cap);

/**
 * ds_is_allowed() - Is @path under one of the site's allow= prefixes?
 * @c: the site's configuration
 * @path: an absolute path with no "." or ".." component (resolved)
 *
 * A prefix matches whole components: /data allows /data/x, not /database.
 *
 * Return: true if allowed, or if allow= is empty.
 */
bool ds_is_allowed(const struct ds_conf *c, const char *path);

/**
 * ds_job_dir_name() - The name of a job's directory on a node,
 * "job<ID>-<NODE>".
 * @job: the job id, digits only
 * @node: the node name, [A-Za-z0-9._-], not starting with '.'
 * @buf: destination
 * @cap: its capacity
 *
 * Return: 0; -EINVAL for an id or node name of another shape;
 * -ENAMETOOLONG.
 */
int ds_job_dir_name(const char *job, const char *node, char *buf, size_t cap);

/**
 * ds_env_name() - The variable that names one image's mount,
 * SQUASHCACHE_MOUNT_<NAME> with NAME upper-cased and other characters '_'.
 * @name: the mount name
 * @buf: destination
 * @cap: its capacity
 *
 * Return: 0; -ENAMETOOLONG.
 */
int ds_env_name(const char *name, char *buf, size_t cap);

#endif /* SQC_SLURM_DATASET_H */
