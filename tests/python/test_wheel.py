"""The wheel is a manylinux wheel that carries its shared libraries: it
installs into a fresh virtual environment (no network, no build tree on its
path) and folds the example model to the CLI's bytes, and draws a diff,
also where Debian's protobuf, yaml-cpp, abseil and Graphviz libraries
cannot be loaded (hidden in a mount namespace)."""
import os
import re
import subprocess

import pytest

from conftest import ROOT, repo_path

# What the wheel must run without: every library the extension is linked
# against but those every Linux has (the C and C++ runtimes, zlib, expat).
EVERY_LINUX = re.compile(r"^(linux-vdso|ld-linux|libc|libm|libstdc\+\+|libgcc_s|libz|libexpat|"
                         r"libpthread|libdl|librt)\.")

WORK = r'''
import ctypes, sys, graft
assert graft.__file__.startswith(sys.prefix), graft.__file__
for hidden in sys.argv[3:]:
    try:
        ctypes.CDLL(hidden)
    except OSError:
        continue
    raise SystemExit("%s can be loaded: it is not hidden" % hidden)
folded, report = graft.apply(sys.argv[1], pipeline="inference")
folded.save(sys.argv[2])
page = str(graft.diff(graft.load(sys.argv[1]), folded, format="html"))
assert "<svg" in page, page[:2000]
print(report["nodes_before"], report["nodes_after"])
'''


def _system_libraries():
    """The real files of the Debian libraries the extension links against."""
    out = subprocess.run(["ldd", repo_path("bazel-bin", "python", "_graft.so")],
                         capture_output=True, text=True, check=True).stdout
    libs = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m and not EVERY_LINUX.match(m.group(1)):
            libs[m.group(1)] = os.path.realpath(m.group(2))
    return libs


def _cli_fold(tmp_path):
    out = tmp_path / "cli.pb"
    subprocess.run([repo_path("bazel-bin", "cli", "graft"), "apply", "-q", "--pipeline",
                    repo_path("rules", "pipelines", "inference.yaml"),
                    repo_path("examples", "keras_cnn.pb"), "-o", str(out)], check=True)
    return out.read_bytes()


def _clean_env():
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def test_the_wheel_is_manylinux():
    wheel = [f for f in os.listdir(os.path.join(ROOT, "build", "wheel")) if f.endswith(".whl")]
    assert len(wheel) == 1 and "-manylinux_2_" in wheel[0], wheel
    show = subprocess.run([os.path.join(ROOT, ".venv", "bin", "auditwheel"), "show",
                           os.path.join(ROOT, "build", "wheel", wheel[0])],
                          capture_output=True, text=True)
    assert show.returncode == 0, show.stderr
    assert re.search(r'consistent\s+with\s+the\s+following\s+platform\s+tag:\s+'
                     r'"manylinux_2_\d+_x86_64"', show.stdout), show.stdout


def test_wheel_in_a_fresh_venv(tmp_path, wheel_venv):
    python, _ = wheel_venv
    proc = subprocess.run([python, "-c", WORK, repo_path("examples", "keras_cnn.pb"),
                           str(tmp_path / "py.pb")], capture_output=True, text=True,
                          cwd=tmp_path, env=_clean_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["68", "63"]
    assert (tmp_path / "py.pb").read_bytes() == _cli_fold(tmp_path)


def test_wheel_without_debians_libraries(tmp_path, wheel_venv):
    python, site = wheel_venv
    libs = _system_libraries()
    for name in ("libprotobuf", "libyaml-cpp", "libabsl_strings", "libgvc", "libgvplugin_core"):
        assert any(k.startswith(name + ".") for k in libs), (name, sorted(libs))
    if subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"],
                      capture_output=True).returncode != 0:
        pytest.skip("this machine has no user and mount namespaces to hide libraries in")
    # /dev/null over each library file (loading it fails: "file too short")
    hide = " && ".join("mount --bind /dev/null '%s'" % path for path in sorted(set(libs.values())))
    script = "%s && exec \"$0\" \"$@\"" % hide
    proc = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "bash", "-c", script,
         python, "-c", WORK, repo_path("examples", "keras_cnn.pb"), str(tmp_path / "py.pb"),
         *sorted(libs)], capture_output=True, text=True, cwd=tmp_path, env=_clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["68", "63"]
    assert (tmp_path / "py.pb").read_bytes() == _cli_fold(tmp_path)
    # and the wheel's own copies are what it loaded
    assert os.path.isdir(os.path.join(site, "graft.libs")), os.listdir(site)
