#!/bin/sh
# TIMEOUT: 600
# ALONE: builds, installs and purges packages
# SANITIZE: no (builds and installs its own packages, without the sanitizer)
# Machine-wide, as 107-deb: installs the packages, purges them at exit.
# Every path the installed man pages and the packages' docs name exists:
# `make deb`, the .debs installed with apt-get, then every absolute path
# under /usr, /etc or /lib naming squashcache or mountctl in the man
# pages, the docs, the conffiles and the units as installed (gzipped or
# not) is looked up:
#   - /usr/local/...: make install's (README.md and docs/admin.md show
#     them beside the packages'), in a `make install PREFIX=/usr/local`
#     of this tree into a staging directory; the installed man pages may
#     name none: they give the packages' own paths;
#   - /usr/lib64/..., /usr/lib/systemd/..., /usr/share/licenses/...: the
#     RPMs' (RHEL's layout; not installed here), counted, not looked up;
#   - /etc/squashcache/datasets/... and /etc/squashcache/site-roots:
#     files the admin writes;
#   - any other: on this machine, where the .debs put it.
# Packages installed by hand beforehand are left installed, as 107 does.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: installs packages"
need_cmd apt-get dpkg-deb lintian zcat
[ -f /usr/include/slurm/spank.h ] || skip "no Slurm headers (libslurm-dev): no plugin to package"
dpkg-query -W -f='${Status}\n' slurm-wlm-basic-plugins 2>/dev/null | grep -q 'ok installed' ||
    skip "slurm-wlm-basic-plugins is not installed: squashcache-slurm cannot be installed offline (sh tests/deps.sh slurm)"
command -v slurmd >/dev/null 2>&1 || command -v srun >/dev/null 2>&1 ||
    skip "neither slurmd nor slurm-client is installed (sh tests/deps.sh slurm)"

pkgs="squashcache squashcache-slurm"
ver=$(dpkg-parsechangelog -l "$TOP/packaging/debian/changelog" -SVersion)
installed_before() {
    dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null | sed -n 's/^install ok installed //p'
}
by_hand=
for p in $pkgs; do
    v=$(installed_before "$p")
    [ -z "$v" ] && continue
    [ "$v" = "$ver" ] || skip "$p $v is installed by hand; this test would replace it with $ver"
    by_hand="$by_hand $p"
done

# --- 1. Build and install the .debs (as 107-deb) -------------------------
t0=$(date +%s)
make -C "$TOP" --no-print-directory deb >"$T/deb.log" 2>&1 || { tail -n 40 "$T/deb.log"; fail "make deb failed"; }
note "make deb in $(($(date +%s) - t0)) s"
apt_q() {
    DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=120 \
        -o Dpkg::Options::=--force-confold "$@"
}
plugindir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm-wlm
if [ -z "$by_hand" ]; then
    at_exit 'for p in $pkgs; do [ -n "$(installed_before "$p")" ] && { apt_q purge $pkgs >/dev/null 2>&1; break; }; done'
    reinstall=
else
    note "installed by hand before:$by_hand (left installed)"
    reinstall=--reinstall
fi
# A make install's plugin where the package puts its own: kept aside,
# put back after the purge (at_exit runs in order).
if [ -e "$plugindir/squashcache_spank.so" ] && ! dpkg -S "$plugindir/squashcache_spank.so" >/dev/null 2>&1; then
    cp -p "$plugindir/squashcache_spank.so" "$T/plugin.make-install"
    at_exit 'cp -p "$T/plugin.make-install" "$plugindir/squashcache_spank.so"'
fi
# shellcheck disable=SC2086
(cd "$TOP" && apt_q install $reinstall ./build/deb/squashcache_"$ver"_*.deb ./build/deb/squashcache-slurm_"$ver"_*.deb) \
    >"$T/apt.log" 2>&1 || { tail -n 30 "$T/apt.log"; fail "apt-get install of the .debs failed"; }
for p in $pkgs; do
    [ "$(installed_before "$p")" = "$ver" ] || fail "$p $ver is not installed after apt-get install"
done

# --- 2. make install's tree, for the /usr/local paths --------------------
make -C "$TOP" --no-print-directory BUILD="$MAKE_BUILD" install PREFIX=/usr/local \
    DESTDIR="$T/stage" >"$T/install.log" 2>&1 || { tail -n 30 "$T/install.log"; fail "make install DESTDIR= failed"; }

# --- 3. The texts, as installed -------------------------------------------
# shellcheck disable=SC2086 # two packages
dpkg -L $pkgs >"$T/files"
grep -E '^/usr/share/man/.*\.gz$' "$T/files" >"$T/man.list"
grep -E '^/usr/share/doc/squashcache(-slurm)?/.*\.(md|md\.gz|sh)$|^/etc/squashcache/|^/etc/slurm/plugstack\.conf\.d/|/systemd/system/squashcache' \
    "$T/files" >"$T/docs.list"
[ "$(wc -l <"$T/man.list")" -eq 3 ] || fail "not 3 man pages installed: $(cat "$T/man.list")"
for d in README.md admin.md slurm.md; do
    grep -q "/usr/share/doc/squashcache/$d" "$T/docs.list" || fail "the package's docs lack $d"
done
"$PYTHON" - "$T/man.list" "$T/docs.list" "$T/stage" >"$T/paths.out" 2>&1 <<'PY' || { cat "$T/paths.out"; fail "paths the installed texts name do not exist (above)"; }
import gzip, os, re, sys
man_list, docs_list, stage = sys.argv[1:4]
PATH_RE = re.compile(r"(?<![\w.$/~-])(/(?:usr|etc|lib)/[A-Za-z0-9_.@%{},/+*-]+)")
RPM = ("/usr/lib64/", "/usr/lib/systemd/", "/usr/share/licenses/")
ADMIN_MADE = ("/etc/squashcache/datasets/", "/etc/squashcache/site-roots")

def text(path):
    data = gzip.open(path, "rb").read() if path.endswith(".gz") else open(path, "rb").read()
    t = data.decode("utf-8", "replace")
    return t.replace("\\&", "").replace("\\e", "\\")

def expand(p):
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    out = []
    for alt in m.group(1).split(","):
        out += expand(p[:m.start()] + alt + p[m.end():])
    return out

bad, counts = [], {"package": 0, "make install": 0, "RPM (not looked up)": 0, "admin's": 0}
for kind, listing in (("man", man_list), ("doc", docs_list)):
    for f in open(listing).read().split():
        for raw in PATH_RE.findall(text(f)):
            raw = raw.rstrip(".,;:)'`\"")
            if not re.search(r"squashcache|mountctl", raw) or "*" in raw:
                continue
            for p in expand(raw):
                p = p.rstrip("/") or "/"
                where = "%s names %s" % (f, p)
                if p.startswith("/usr/local/"):
                    counts["make install"] += 1
                    if kind == "man":
                        bad.append(where + ": an installed man page gives make install's path, not the package's")
                    elif not os.path.lexists(stage + p):
                        bad.append(where + ": not in a make install PREFIX=/usr/local")
                elif p.startswith(RPM):
                    counts["RPM (not looked up)"] += 1
                elif p.startswith(ADMIN_MADE):
                    counts["admin's"] += 1
                else:
                    counts["package"] += 1
                    if not os.path.lexists(p):
                        bad.append(where + ": not on this machine with the packages installed")
for b in sorted(set(bad)):
    print("MISSING:", b)
print("paths named: " + ", ".join("%d %s" % (n, k) for k, n in counts.items()))
if counts["package"] < 20 or counts["make install"] < 5:
    print("too few paths found: the extraction is broken")
    sys.exit(1)
sys.exit(1 if bad else 0)
PY
cat "$T/paths.out"
note "texts: $(wc -l <"$T/man.list") man pages, $(wc -l <"$T/docs.list") docs, conffiles and units"
exit 0
