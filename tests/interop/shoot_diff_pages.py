"""Takes the pictures in docs/ (not a test): the HTML diff of folding the
batch norms of tf-keras ResNet50 (random weights, frozen) and of the
bundled example, and the `graft review` page of a rule change, each opened
in headless Chromium.

  .venv/bin/python tests/interop/shoot_diff_pages.py

Prints each page's size and drawing numbers.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
from tensorflow.python.framework import convert_to_constants  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAFT = os.path.join(ROOT, "bazel-bin", "cli", "graft")


def shoot(page, png, width, height):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=%d,%d" % (width, height), "--screenshot=%s" % png,
                    "file://" + page], check=True, capture_output=True, timeout=120)
    print("%s: %s (%d bytes)" % (os.path.basename(png), re.search(
        r"<small>([^<]*)</small>", open(page).read()).group(1), os.path.getsize(png)))


def main():
    tmp = tempfile.mkdtemp()
    model = tf_keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3), classes=1000)
    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec([1, 224, 224, 3], tf.float32, name="input"))
    graph_def = convert_to_constants.convert_variables_to_constants_v2(fn).graph.as_graph_def()
    src = os.path.join(tmp, "resnet50.pb")
    with open(src, "wb") as f:
        f.write(graph_def.SerializeToString())
    rules = os.path.join(ROOT, "rules", "tf", "fold_batch_norms.graft")
    folded = os.path.join(tmp, "folded.pb")
    subprocess.run([GRAFT, "apply", "-q", "-r", rules, src, "-o", folded], check=True)
    page = os.path.join(tmp, "resnet50.html")
    with open(page, "w") as f:
        subprocess.run([GRAFT, "diff", "--format", "html", src, folded], stdout=f, check=True)
    shoot(page, os.path.join(ROOT, "docs", "diff_resnet50.png"), 1400, 1400)

    example = os.path.join(ROOT, "examples", "keras_cnn.pb")
    folded = os.path.join(tmp, "example_folded.pb")
    subprocess.run([GRAFT, "apply", "-q", "-r", rules, example, "-o", folded], check=True)
    page = os.path.join(tmp, "example.html")
    with open(page, "w") as f:
        subprocess.run([GRAFT, "diff", "--format", "html", example, folded], stdout=f, check=True)
    shoot(page, os.path.join(ROOT, "docs", "diff_example.png"), 1400, 900)

    # A rule change that stops the fold of every batch norm named `*_1/`
    # (as cli/cli_test.sh does): the review page over both models.
    fewer = os.path.join(tmp, "fold_fewer.graft")
    guard = "where bn.is_training == false and uses(conv) == 1 and uses(bias) == 1"
    text = open(rules).read().replace(
        'import "fold_constants.graft"',
        'import "%s"' % os.path.join(ROOT, "rules", "tf", "fold_constants.graft")).replace(
        guard, guard + ' and not name_matches(bn, ".*_1/.*")')
    assert guard in open(rules).read()
    with open(fewer, "w") as f:
        f.write(text)
    # Models named relative to a folder of their own, as a team's zoo is.
    shutil.copy(example, os.path.join(tmp, "keras_cnn.pb"))
    page = os.path.join(tmp, "review.html")
    with open(page, "w") as f:
        subprocess.run([GRAFT, "review", "--base", rules, "--head", fewer, "keras_cnn.pb",
                        "resnet50.pb", "--format", "html"], stdout=f, check=True, cwd=tmp)
    shoot(page, os.path.join(ROOT, "docs", "review_example.png"), 1400, 1100)


if __name__ == "__main__":
    sys.exit(main())
