"""docs/security.md's CI recipe, run as written over a folder of models a
pull request could add: one good ONNX model, and one whose external data
file is a link to a file outside its folder. The review lists the hostile
model as failed with its error and exits 1; the linked file's bytes appear
in no output. The good model is reviewed as usual."""
import os
import re
import shutil
import subprocess

from conftest import graft_binary, repo_path

SECRET = b"GRAFT-SECRET-do-not-leak-"


def recipe():
    text = open(repo_path("docs", "security.md")).read()
    m = re.search(r"```sh\n(.*?)```", text, re.S)
    assert m, "docs/security.md has no sh block"
    return m.group(1)


def test_ci_recipe_lists_the_hostile_model_as_failed(tmp_path):
    onnx_dir = repo_path("tests", "data", "onnx")
    models = tmp_path / "checkout" / "models"
    (models / "good").mkdir(parents=True)
    (models / "hostile").mkdir()
    for name in ("external_ok.onnx", "external_ok.onnx.data"):
        shutil.copy(os.path.join(onnx_dir, name), models / "good" / name)
    shutil.copy(os.path.join(onnx_dir, "external_ok.onnx"), models / "hostile" / "m.onnx")
    size = os.path.getsize(os.path.join(onnx_dir, "external_ok.onnx.data"))
    secret = tmp_path / "home" / "secret.bin"
    secret.parent.mkdir()
    secret.write_bytes((SECRET * (size // len(SECRET) + 1))[:size])
    os.symlink(secret, models / "hostile" / "external_ok.onnx.data")
    # The recipe names the shipped pipeline by path, from the checkout.
    shutil.copytree(repo_path("rules"), tmp_path / "checkout" / "rules")
    script = recipe().replace("graft review", graft_binary() + " review", 1)
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path / "checkout",
                          capture_output=True, timeout=300)
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    review = (tmp_path / "checkout" / "review.md").read_bytes()
    assert SECRET not in review and SECRET not in proc.stdout and SECRET not in proc.stderr
    text = review.decode()
    assert "hostile/m.onnx" in text and "outside the model's folder" in text, text
    assert "of 2 model(s)" in text and "1 model(s) failed" in text, text
    # Nothing but the report was written.
    written = sorted(p.name for p in (tmp_path / "checkout").iterdir())
    assert written == ["models", "review.md", "rules"], written
