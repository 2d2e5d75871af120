"""Adds up test results: GoogleTest XML under bazel-testlogs, `N passed, N
failed` lines of shell tests, pytest JUnit files (a file, or every *.xml of
a folder), and checks given as `name=exit_status` (one test each). Prints
`failed: WHAT` for each failed check, test case or shell test, then one
line `N passed, N failed`, and exits 1 when anything failed or nothing ran."""
import os
import re
import sys
import xml.etree.ElementTree as ET


def count_junit(path):
    """(passed, failed) of a JUnit file; prints each failed test case."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    total = failed = skipped = 0
    for s in suites:
        total += int(s.get("tests", 0))
        failed += int(s.get("failures", 0)) + int(s.get("errors", 0))
        skipped += int(s.get("skipped", 0) or s.get("disabled", 0) or 0)
        for case in s.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                print("failed: %s::%s" % (case.get("classname", ""), case.get("name", "")))
    return total - failed - skipped, failed


def main(testlogs, pytest_xml, checks=()):
    passed = failed = 0
    for check in checks:
        name, _, rc = check.partition("=")
        if rc == "0":
            passed += 1
        else:
            failed += 1
            print("failed: %s" % name)
    for dirpath, _, files in os.walk(testlogs, followlinks=True):
        if "test.xml" not in files:
            continue
        log = os.path.join(dirpath, "test.log")
        text = open(log, errors="replace").read() if os.path.exists(log) else ""
        m = re.findall(r"^(\d+) passed, (\d+) failed$", text, re.M)
        if "[==========]" in text:  # GoogleTest writes its own XML
            p, f = count_junit(os.path.join(dirpath, "test.xml"))
        elif m:
            p, f = int(m[-1][0]), int(m[-1][1])
            if f:
                print("failed: %s (%d of its checks)" % (os.path.relpath(dirpath, testlogs), f))
        else:
            p, f = count_junit(os.path.join(dirpath, "test.xml"))
        passed, failed = passed + p, failed + f
    if os.path.isdir(pytest_xml):
        xmls = sorted(os.path.join(pytest_xml, f) for f in os.listdir(pytest_xml)
                      if f.endswith(".xml"))
    else:
        xmls = [pytest_xml] if os.path.exists(pytest_xml) else []
    if not xmls:
        failed += 1  # pytest died before writing its report
    for xml in xmls:
        p, f = count_junit(xml)
        passed, failed = passed + p, failed + f
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
