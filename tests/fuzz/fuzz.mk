# libFuzzer targets: clang, ASan + UBSan (+ LeakSanitizer), in build-fuzz/.
#
#   make fuzz                               build every tests/fuzz/fuzz_*.c
#   make -f tests/fuzz/fuzz.mk run          run each for FUZZ_SECONDS (60)
#   make -f tests/fuzz/fuzz.mk run FUZZ_TARGETS=fuzz_image FUZZ_SECONDS=1800
#   make -f tests/fuzz/fuzz.mk seeds        only (re)generate the seed dirs
#
# Each target fuzz_NAME.c becomes build-fuzz/fuzz_NAME.  `run` fuzzes it
# with the corpus tests/fuzz/corpus/fuzz_NAME (gitignored; new inputs are
# written there) and the read-only seed dir build-fuzz/seeds/fuzz_NAME,
# which holds tests/fuzz/regress/NAME-* (every input that ever crashed it)
# plus, for fuzz_image, the small valid images of every compressor that
# tests/images/mkimages.sh makes (for fuzz_decompress, their compressed
# metadata blocks, cut out by tests/images/corrupt.py blocks), plus
# tests/fuzz/seeds/fuzz_NAME/* if a target ships seeds of its own.  Crashes land in
# build-fuzz/artifacts/fuzz_NAME-crash-*: minimise one with
#   build-fuzz/fuzz_NAME -minimize_crash=1 -runs=10000 FILE
# and copy it to tests/fuzz/regress/NAME-<what>, where `make check`
# replays it (tests/integration/050-fuzz-regress.sh).
#
# The library is compiled again with the same sanitizer flags (plus
# -fsanitize=fuzzer-no-link for coverage) into build-fuzz/lib/.  The main
# Makefile passes FUZZ_SRCS, LIB_SRCS and LIB_LIBS; the defaults below make
# this file usable on its own.

CLANG ?= clang
PYTHON ?= /usr/bin/python3
FUZZ_BUILD ?= build-fuzz
FUZZ_SRCS ?= $(sort $(wildcard tests/fuzz/fuzz_*.c))
LIB_SRCS ?= $(sort $(wildcard lib/*/*.c))
LIB_LIBS ?= -llz4 -lzstd -lz -llzma -llzo2 -lcrypto -lm
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= 1
# Extra libFuzzer flags for `run`, e.g. FUZZ_FLAGS=-max_len=65536.
FUZZ_FLAGS ?=
# 1: fork mode, keep fuzzing after a crash/timeout (long unattended runs).
FUZZ_KEEP_GOING ?= 0

SAN := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_CFLAGS := -std=c11 -g -O1 -D_GNU_SOURCE -Ilib -pthread $(SAN) \
	-Wall -Wextra -Wno-unused-parameter -MMD -MP

FUZZ_TARGETS ?= $(notdir $(FUZZ_SRCS:.c=))
FUZZ_BINS := $(addprefix $(FUZZ_BUILD)/,$(FUZZ_TARGETS))
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/%.o)
FUZZ_LIB := $(FUZZ_BUILD)/libsquashcache-fuzz.a

.PHONY: all run seeds clean
.SUFFIXES:
.SECONDARY:

all: $(FUZZ_BINS)

$(FUZZ_BUILD)/lib/%.o: lib/%.c
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(FUZZ_BUILD)/fuzz_%.o: tests/fuzz/fuzz_%.c
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/fuzz_%.o $(FUZZ_LIB)
	$(CLANG) $(SAN) -fsanitize=fuzzer -pthread -o $@ $< $(FUZZ_LIB) $(LIB_LIBS)

# Seed dirs: rebuilt from scratch so a deleted regress file disappears.
seeds:
	@for t in $(FUZZ_TARGETS); do \
		d=$(FUZZ_BUILD)/seeds/$$t; rm -rf $$d; mkdir -p $$d; \
		n=$${t#fuzz_}; \
		for f in tests/fuzz/regress/$$n-*; do \
			[ -f "$$f" ] && cp "$$f" $$d/; \
		done; \
		if [ -d tests/fuzz/seeds/$$t ]; then cp tests/fuzz/seeds/$$t/* $$d/; fi; \
		if [ $$t = fuzz_image ] || [ $$t = fuzz_index ]; then \
			sh tests/images/mkimages.sh $$d/images >/dev/null && \
			mv $$d/images/*.sqfs $$d/ && rm -rf $$d/images; \
		fi; \
		if [ $$t = fuzz_decompress ]; then \
			sh tests/images/mkimages.sh $$d/images >/dev/null && \
			for i in $$d/images/*.sqfs; do \
				$(PYTHON) tests/images/corrupt.py blocks $$i $$d >/dev/null; \
			done; rm -rf $$d/images; \
		fi; \
		echo "seeds for $$t: $$(ls $$d | wc -l) files"; \
	done

# One target after the other; FUZZ_JOBS > 1 runs that many workers each.
run: all seeds
	@mkdir -p $(FUZZ_BUILD)/artifacts $(FUZZ_BUILD)/logs
	@status=0; for t in $(FUZZ_TARGETS); do \
		mkdir -p tests/fuzz/corpus/$$t; \
		echo "fuzzing $$t for $(FUZZ_SECONDS)s (log: $(FUZZ_BUILD)/logs/$$t.log)"; \
		if [ "$(FUZZ_KEEP_GOING)" = 1 ]; then \
			par="-fork=$(FUZZ_JOBS) -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"; \
		elif [ $(FUZZ_JOBS) -gt 1 ]; then par="-jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS)"; else par=""; fi; \
		./$(FUZZ_BUILD)/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=25 \
			-rss_limit_mb=2048 -print_final_stats=1 $$par \
			-artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t- $(FUZZ_FLAGS) \
			tests/fuzz/corpus/$$t $(FUZZ_BUILD)/seeds/$$t \
			>$(FUZZ_BUILD)/logs/$$t.log 2>&1 || status=1; \
		grep -E '^(stat::|#[0-9]+.*DONE|#[0-9]+: cov|==[0-9]+==ERROR|SUMMARY)' $(FUZZ_BUILD)/logs/$$t.log | tail -n 12; \
	done; exit $$status

clean:
	rm -rf $(FUZZ_BUILD)

-include $(shell find $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
