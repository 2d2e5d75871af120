"""graft's HTML diff and review pages open in headless Chromium and render
pictures (docs/diff_example.png and the others were taken this way:
tests/interop/shoot_diff_pages.py); a click on a node opens its attrs."""
import re
import shutil
import subprocess

import pytest

from conftest import repo_path


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium is not installed: run scripts/setup.sh")


def screenshot(page, height):
    """The page in headless Chromium, 1400 wide: the PNG's bytes."""
    shot = page.with_suffix(".png")
    proc = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", "--window-size=1400,%d" % height,
                           "--screenshot=%s" % shot, page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    return shot.read_bytes()


def test_html_diff_renders_in_chromium(graft, tmp_path):
    folded = tmp_path / "folded.pb"
    graft("apply", "-q", "-r", repo_path("rules", "tf", "fold_batch_norms.graft"),
          repo_path("examples", "keras_cnn.pb"), "-o", folded)
    html = graft("diff", "--format", "html", repo_path("examples", "keras_cnn.pb"), folded).stdout
    text = graft("diff", repo_path("examples", "keras_cnn.pb"), folded).stdout
    summary = text.strip().splitlines()[-1]
    assert summary.endswith("changed") and not summary.startswith("0 added")
    assert html.startswith("<!DOCTYPE html>")
    assert "<svg" in html and summary in html
    page = tmp_path / "diff.html"
    page.write_text(html)
    data = screenshot(page, 900)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    # A blank page compresses to a few kilobytes; the drawn diff does not.
    assert len(data) > 50000, len(data)


def dump_dom(page):
    proc = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_clicking_a_node_shows_its_attrs_before_and_after(graft, tmp_path):
    folded = tmp_path / "folded.pb"
    graft("apply", "-q", "-r", repo_path("rules", "tf", "fold_batch_norms.graft"),
          repo_path("examples", "keras_cnn.pb"), "-o", folded)
    html = graft("diff", "--format", "html", repo_path("examples", "keras_cnn.pb"), folded).stdout
    # The batch norm that became a BiasAdd: its box id in the page's data.
    bn = "keras_cnn/batch_normalization/FusedBatchNormV3"
    match = re.search(r'"(n\d+)":\{"name":"%s","op":"BiasAdd","status":"changed"' % re.escape(bn),
                      html)
    assert match, "no box for %s" % bn
    assert 'id="%s"' % match.group(1) in html  # Graphviz drew it under that id
    page = tmp_path / "diff.html"
    page.write_text(html.replace(
        "</body>", "<script>window.addEventListener('load', function() {"
        " document.getElementById('%s').dispatchEvent(new MouseEvent('click', {bubbles: true}));"
        " });</script></body>" % match.group(1)))
    dom = dump_dom(page)
    panel = dom[dom.index('id="graft-panel"'):]
    assert "display: block" in panel[:200]
    assert bn in panel
    # The op row differs: FusedBatchNormV3 before, BiasAdd after.
    # Rows keyed by what they are; those that differ are marked.
    assert ('<tr class="differs"><td>input 0</td><td>`keras_cnn/conv2d/Conv2D`</td>'
            '<td>`%s/folded`</td></tr>' % bn) in panel, panel[:3000]
    assert '<tr class="differs"><td>attr `epsilon`</td><td>f: 0.001</td><td></td></tr>' in panel
    assert "<tr><td>attr `T`</td><td>type: DT_FLOAT</td><td>type: DT_FLOAT</td></tr>" in panel
    assert "folded into this box" in panel


def test_review_page_renders_in_chromium(graft, tmp_path):
    rules = repo_path("rules", "tf", "fold_batch_norms.graft")
    fewer = tmp_path / "fold_fewer.graft"
    guard = "where bn.is_training == false and uses(conv) == 1 and uses(bias) == 1"
    text = open(rules).read()
    assert guard in text
    fewer.write_text(text.replace(
        'import "fold_constants.graft"', 'import "%s"' % repo_path("rules", "tf", "fold_constants.graft"))
        .replace(guard, guard + ' and not name_matches(bn, ".*_1/.*")'))
    html = graft("review", "--base", rules, "--head", fewer, repo_path("examples", "keras_cnn.pb"),
                 "--format", "html").stdout
    assert "The change alters 1 of 1 model(s)." in html
    assert "keras_cnn/batch_normalization_1/FusedBatchNormV3" in html
    page = tmp_path / "review.html"
    page.write_text(html)
    assert len(screenshot(page, 1100)) > 50000


def test_onnx_diff_and_review_pages_render_in_chromium(graft, tmp_path):
    """The same pages for ONNX models: ShuffleNet (onnx_zoo.py) folded, its
    batch norms drawn as the Convs they became; a review of a change to the
    ONNX library that stops one fold names that node."""
    from onnx_zoo import make
    src = make("shufflenet", str(tmp_path))
    rules = repo_path("rules", "onnx", "fold_batch_norms.graft")
    folded = tmp_path / "folded.onnx"
    graft("apply", "-q", "-r", rules, src, "-o", folded)
    html = graft("diff", "--format", "html", src, folded).stdout
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html
    assert re.search(r'"n\d+":\{"name":"n5","op":"Conv","status":"changed"', html), \
        "no box for the batch norm n5 drawn as the Conv it became"
    page = tmp_path / "diff.html"
    page.write_text(html)
    assert len(screenshot(page, 900)) > 50000
    guard = 'attr(bn, "training_mode", 0) == 0'
    text = open(rules).read()
    assert guard in text
    fewer = tmp_path / "fold_fewer.graft"
    fewer.write_text(text.replace(guard, guard + ' and bn.name != "n5"', 1))
    html = graft("review", "--base", rules, "--head", fewer, src, "--format", "html").stdout
    assert "The change alters 1 of 1 model(s)." in html
    assert "n5" in html
    page = tmp_path / "review.html"
    page.write_text(html)
    assert len(screenshot(page, 1100)) > 50000
