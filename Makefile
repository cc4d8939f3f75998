# squashcache: one non-recursive Makefile.
#
#   make                 build/libsquashcache.a, build/squashcached, build/mountctl
#   make check           install missing packages (as root), build, run every test
#   make demo            the main job on a generated sample dataset
#   make DEBUG=1 ...     -O0 -g3
#   make SANITIZE=address,undefined check   sanitizer build in build-san/
#   make fuzz            libFuzzer targets (clang), see tests/fuzz/
#   make bench           the full benchmark (long), report in $SQC_BENCH_OUT
#                        (default /var/tmp/squashcache-bench/results)
#   make bench-scale     ImageNet's file count (1.28M files), see bench/README.md
#   make bench-ram       a data set 4 times the RAM budget behind slow storage
#   make bench-decode    decode-bound epochs (the training transform)
#   make bench-hdf5      the HDF5 recipe side by side with squashcached
#   make bench-sweep     jobs with and without a kept staged copy (issue 28)
#   make bench-seal      staging and first epoch with and without a seal
#   make bench-ranks     a node's ranks (1, 4, 8) sharing a mount, each its own
#                        epoch order, behind slow storage (issue 38)
#   make bench-site      users' jobs on one site image: a site copy, a copy
#                        per user, no keeping
#   make install PREFIX=/usr/local   (SYSTEMD_UNITDIR= for the unit)
#   make deb             Debian packages squashcache and squashcache-slurm
#                        in build/deb/ (packaging/), checked with lintian
#   make dist            release tarball build/dist/squashcache-VERSION.tar.gz
#                        (git tree and RPM spec: rpmbuild -ta builds it)
#   make rpm             RPM packages squashcache and squashcache-slurm
#                        in build/rpm/ (rpmbuild -ta), checked with rpmlint

PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
SYSTEMD_UNITDIR ?= $(PREFIX)/lib/systemd/system
DESTDIR ?=
CC ?= cc
PKG_CONFIG ?= pkg-config
PYTHON ?= /usr/bin/python3

ifneq ($(SANITIZE),)
BUILD ?= build-san
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
else
BUILD ?= build
SAN_FLAGS :=
endif

ifeq ($(DEBUG),1)
OPT := -O0 -g3
else
OPT := -O2 -g
endif

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wno-format-nonliteral -Wpointer-arith -Wvla
ifeq ($(WERROR),1)
WARN += -Werror
endif

CPPFLAGS += -D_GNU_SOURCE -Ilib
CFLAGS ?=
ALL_CFLAGS := -std=c11 $(OPT) $(WARN) $(SAN_FLAGS) -pthread -MMD -MP $(CFLAGS)
LDFLAGS += $(SAN_FLAGS) -pthread

LIB_LIBS := -llz4 -lzstd -lz -llzma -llzo2 -lcrypto -lm
FUSE_CFLAGS = $(shell $(PKG_CONFIG) --cflags fuse3 2>/dev/null)
FUSE_LIBS = $(shell $(PKG_CONFIG) --libs fuse3 2>/dev/null || echo -lfuse3)
# io_uring (daemon/uring.c) only where liburing is installed; SQC_NO_URING=1
# builds without it (uring.c then reports io_uring unavailable).
ifeq ($(SQC_NO_URING),1)
HAVE_URING := 0
else
HAVE_URING := $(shell $(PKG_CONFIG) --exists liburing 2>/dev/null && echo 1 || \
	{ test -f /usr/include/liburing.h && echo 1 || echo 0; })
endif
ifeq ($(HAVE_URING),1)
URING_LIBS := $(shell $(PKG_CONFIG) --libs liburing 2>/dev/null || echo -luring)
else
URING_LIBS :=
endif
CPPFLAGS += -DSQC_HAVE_URING=$(HAVE_URING)
CHECK_CFLAGS = $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS = $(shell $(PKG_CONFIG) --libs check 2>/dev/null || echo -lcheck)

LIB_SRCS := $(sort $(wildcard lib/*/*.c))
DAEMON_SRCS := $(sort $(wildcard daemon/*.c))
MOUNTCTL_SRCS := $(sort $(wildcard mountctl/*.c))
# The Slurm node side (slurm/README.md): linked into mountctl, except the
# SPANK plugin, which slurmd and srun load.
SLURM_SRCS := $(filter-out slurm/squashcache_spank.c,$(sort $(wildcard slurm/*.c)))
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_COMMON := $(sort $(filter-out tests/unit/test_%.c,$(wildcard tests/unit/*.c)))
TOOL_SRCS := $(sort $(wildcard tests/tools/*.c))
BENCH_SRCS := $(sort $(wildcard bench/*.c))

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(BUILD)/%.o)
# Objects apart from the binary of the same name.
MOUNTCTL_OBJS := $(MOUNTCTL_SRCS:mountctl/%.c=$(BUILD)/mountctl-obj/%.o)
SLURM_OBJS := $(SLURM_SRCS:%.c=$(BUILD)/%.o)
UNIT_COMMON_OBJS := $(UNIT_COMMON:%.c=$(BUILD)/%.o)
UNIT_BINS := $(UNIT_SRCS:%.c=$(BUILD)/%)
TOOL_BINS := $(TOOL_SRCS:%.c=$(BUILD)/%)
BENCH_BINS := $(BENCH_SRCS:%.c=$(BUILD)/%)

LIB := $(BUILD)/libsquashcache.a
# slurm/ needs lib/ alone (tests/lint.sh): mountctl links it for `mountctl
# job` and `mountctl keeper`, a unit test as it is.
SLURM_LIB := $(BUILD)/libsqcslurm.a
DAEMON := $(BUILD)/squashcached
MOUNTCTL := $(BUILD)/mountctl

.PHONY: all check check-unit check-integration check-tsan deps deps-check \
	deps-demo deb dist rpm tests fuzz fuzz-run format format-check lint install \
	uninstall clean demo bench bench-scale bench-ram bench-decode bench-hdf5 bench-sweep \
	bench-seal bench-ranks bench-site soak

# The SPANK plugin is built only where Slurm's headers are installed, and
# never with sanitizers (slurmd and srun load it and have no ASan runtime).
SLURM_SPANK_H ?= /usr/include/slurm/spank.h
# Slurm's own plugin directory for the system's prefixes (/usr, /usr/local),
# else one under PREFIX: `make install PREFIX=$HOME/.local` needs no root.
SLURM_SYS_PLUGINDIR := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib64/slurm /usr/lib/slurm) /usr/lib/slurm)
SLURM_PLUGINDIR ?= $(if $(filter /usr /usr/local,$(PREFIX)),$(SLURM_SYS_PLUGINDIR),$(PREFIX)/lib/slurm)
SPANK := $(if $(wildcard $(SLURM_SPANK_H)),$(BUILD)/squashcache_spank.so)

all: $(LIB) $(DAEMON) $(MOUNTCTL) $(SPANK)

# The plugin links the config parser (slurm/dataset.c, which needs no
# other file of the project) and nothing else of the project.
$(BUILD)/squashcache_spank.so: slurm/squashcache_spank.c slurm/dataset.c slurm/dataset.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out $(SAN_FLAGS) -MMD -MP,$(ALL_CFLAGS)) \
		-Wno-missing-prototypes -Wno-format-truncation \
		-DSQC_MOUNTCTL='"$(PREFIX)/bin/mountctl"' -fPIC -shared \
		$(filter-out $(SAN_FLAGS),$(LDFLAGS)) -o $@ slurm/squashcache_spank.c slurm/dataset.c

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/daemon/%.o: daemon/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(FUSE_CFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/mountctl-obj/%.o: mountctl/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I. $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/bench/%.o: bench/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(FUSE_CFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/tests/tools/%.o: tests/tools/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(FUSE_CFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I. -Itests/unit $(CHECK_CFLAGS) $(ALL_CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(DAEMON): $(DAEMON_OBJS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(DAEMON_OBJS) $(LIB) $(FUSE_LIBS) $(URING_LIBS) $(LIB_LIBS)

$(SLURM_LIB): $(SLURM_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(MOUNTCTL): $(MOUNTCTL_OBJS) $(SLURM_LIB) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(MOUNTCTL_OBJS) $(SLURM_LIB) $(LIB) $(LIB_LIBS)

$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(UNIT_COMMON_OBJS) $(SLURM_LIB) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(UNIT_COMMON_OBJS) $(SLURM_LIB) $(LIB) $(CHECK_LIBS) $(LIB_LIBS)

$(BUILD)/tests/tools/%: $(BUILD)/tests/tools/%.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(FUSE_LIBS) $(LIB_LIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(FUSE_LIBS) $(LIB_LIBS)

tests: all $(UNIT_BINS) $(TOOL_BINS) $(BUILD)/bench/slowfs  # slowfs: tests/integration/115-slowfs.sh

# Packages: `make check` and `make demo` install what is missing when run
# as root and print the apt-get line otherwise.
deps:
	@sh tests/deps.sh build
deps-check:
	@sh tests/deps.sh check
deps-demo:
	@sh tests/deps.sh demo

check: deps-check
	@$(MAKE) --no-print-directory tests
	@BUILD=$(BUILD) PYTHON=$(PYTHON) SQC_SANITIZE=$(SANITIZE) sh tests/run.sh all

check-unit: tests
	@BUILD=$(BUILD) sh tests/run.sh unit

check-integration: tests
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh tests/run.sh integration

# ThreadSanitizer over the concurrent tests (cache, prefetch, many readers).
check-tsan: deps-check
	@$(MAKE) --no-print-directory SANITIZE=thread BUILD=build-tsan tests
	@BUILD=build-tsan PYTHON=$(PYTHON) SQC_TSAN=1 SQC_SANITIZE=thread sh tests/run.sh tsan

demo: deps-demo
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh tests/demo.sh

bench: deps-check
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh bench/run.sh

bench-scale: deps-check
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh bench/run.sh scale

bench-ram: deps-check
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh bench/run.sh ram

bench-decode: deps-check
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh bench/run.sh decode

bench-hdf5: deps-check
	@sh tests/deps.sh bench
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh bench/run.sh hdf5

bench-sweep: deps-check
	@sh tests/deps.sh bench
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh bench/run.sh sweep

bench-seal: deps-check
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh bench/run.sh seal

bench-ranks: deps-check
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh bench/run.sh ranks

bench-site: deps-check
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh bench/run.sh site

# Debian packages from this tree (packaging/deb.sh), then lintian: any
# error fails.  Needs no network once tests/deps.sh has what it lists.
deb:
	@sh tests/deps.sh deb
	@MAKE="$(MAKE)" sh packaging/deb.sh
	lintian --fail-on error build/deb/*.deb

# The release tarball of the git tree with squashcache.spec at its top
# (packaging/dist.sh): what `rpmbuild -ta` takes.
dist:
	@sh packaging/dist.sh

# RPM packages from that tarball into build/rpm/ (packaging/rpm.sh), then
# rpmlint with RHEL's conventions (packaging/rpm/rpmlint.toml): any error
# fails.  Not linted: the -debuginfo and -debugsource packages, all
# rpm's own making, whose .debug files rpmlint takes for libraries.
# Warnings left: no-url-tag and invalid-url (no public home page or
# download address), requires-on-release (squashcache-slurm needs the
# squashcache of its own build) and no-manual-page-for-binary (rpmlint
# 2.4 compares the programs with man sections, not man pages).
rpm:
	@sh tests/deps.sh rpm
	@sh packaging/dist.sh
	@sh packaging/rpm.sh
	rpmlint -c packaging/rpm/rpmlint.toml $$(ls build/rpm/RPMS/*/*.rpm | \
		grep -v -e -debuginfo- -e -debugsource-) build/rpm/SRPMS/*.rpm

soak: tests
	@BUILD=$(BUILD) PYTHON=$(PYTHON) SQC_SOAK_SECONDS=600 sh tests/run.sh soak

FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
fuzz:
	@$(MAKE) --no-print-directory -f tests/fuzz/fuzz.mk FUZZ_SRCS="$(FUZZ_SRCS)" LIB_SRCS="$(LIB_SRCS)" LIB_LIBS="$(LIB_LIBS)"

# Run every fuzz target for FUZZ_SECONDS (default 60) each.
fuzz-run:
	@sh tests/deps.sh fuzz
	@$(MAKE) --no-print-directory -f tests/fuzz/fuzz.mk FUZZ_SRCS="$(FUZZ_SRCS)" LIB_SRCS="$(LIB_SRCS)" LIB_LIBS="$(LIB_LIBS)" run

C_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find lib daemon mountctl slurm tests bench -name '*.[ch]')
format:
	clang-format -i $(C_FILES)
format-check:
	clang-format --dry-run -Werror $(C_FILES)

# Module boundaries and shell scripts (tests/lint.sh says which).
lint:
	@sh tests/lint.sh

# The Python helper (python/squashcache): where the system's python3
# looks, /usr/lib/python3/dist-packages for PREFIX=/usr.
PYTHON_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3)
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(PYTHON_VERSION)/dist-packages)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/squashcache
	install -m 0755 $(DAEMON) $(MOUNTCTL) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	for h in $(filter-out %_i.h lib/image/sqfs_fmt.h,$(wildcard lib/*/*.h)); do \
		d=$(DESTDIR)$(PREFIX)/include/squashcache/$$(dirname $${h#lib/}); \
		install -d $$d; install -m 0644 $$h $$d/; done
	install -d $(DESTDIR)$(PYTHONDIR)/squashcache
	install -m 0644 python/squashcache/__init__.py python/squashcache/torch.py \
		python/squashcache/retar.py $(DESTDIR)$(PYTHONDIR)/squashcache/
	# The man pages name the paths of this install: the sources give
	# those of PREFIX=/usr/local and of Debian's amd64 plugin directory.
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8
	for m in man1/mountctl.1 man8/squashcached.8 man8/squashcache_spank.8; do \
		sed -e 's|/usr/local/|$(PREFIX)/|g' \
			-e 's|/usr/lib/x86_64-linux-gnu/slurm-wlm/|$(SLURM_PLUGINDIR)/|g' \
			man/$${m#*/} >$(DESTDIR)$(MANDIR)/$$m && \
		chmod 0644 $(DESTDIR)$(MANDIR)/$$m || exit 1; done
	install -d $(DESTDIR)$(PREFIX)/libexec/squashcache
	install -m 0755 slurm/hooks/prolog slurm/hooks/epilog slurm/hooks/task-prolog \
		slurm/hooks/site-task-prolog slurm/hooks/sqc-common.sh \
		slurm/examples/sbcast-job.sh systemd/squashcache-dataset \
		$(DESTDIR)$(PREFIX)/libexec/squashcache/
	install -d $(DESTDIR)$(SYSTEMD_UNITDIR)
	sed 's|/usr/local/libexec/squashcache/|$(PREFIX)/libexec/squashcache/|' \
		systemd/squashcache@.service >$(DESTDIR)$(SYSTEMD_UNITDIR)/squashcache@.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_UNITDIR)/squashcache@.service
	sed 's|/usr/local/bin/|$(PREFIX)/bin/|' systemd/squashcache-keeper.service \
		>$(DESTDIR)$(SYSTEMD_UNITDIR)/squashcache-keeper.service
	chmod 0644 $(DESTDIR)$(SYSTEMD_UNITDIR)/squashcache-keeper.service
	$(if $(SPANK),install -d $(DESTDIR)$(SLURM_PLUGINDIR) && \
		install -m 0755 $(SPANK) $(DESTDIR)$(SLURM_PLUGINDIR)/)

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/squashcached $(DESTDIR)$(PREFIX)/bin/mountctl \
		$(DESTDIR)$(PREFIX)/lib/libsquashcache.a
	rm -rf $(DESTDIR)$(PREFIX)/include/squashcache $(DESTDIR)$(PREFIX)/libexec/squashcache \
		$(DESTDIR)$(PYTHONDIR)/squashcache
	rm -f $(DESTDIR)$(SLURM_PLUGINDIR)/squashcache_spank.so
	rm -f $(DESTDIR)$(SYSTEMD_UNITDIR)/squashcache@.service \
		$(DESTDIR)$(SYSTEMD_UNITDIR)/squashcache-keeper.service
	rm -f $(DESTDIR)$(MANDIR)/man1/mountctl.1 $(DESTDIR)$(MANDIR)/man8/squashcached.8 \
		$(DESTDIR)$(MANDIR)/man8/squashcache_spank.8

clean:
	rm -rf build build-san build-tsan build-fuzz

# (build/deb/ holds the package build: its objects and its staging trees,
# where a directory may be named *.d; build/rpm/ rpmbuild's, with a build
# of its own.)
-include $(shell find $(BUILD) \( -path $(BUILD)/deb -o -path $(BUILD)/rpm \) -prune -o -name '*.d' -type f -print 2>/dev/null)
