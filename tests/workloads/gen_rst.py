# Writes a reStructuredText document of argv[1] sections to stdout: the
# input that tests/real-docutils.sh has Debian's docutils render. Each
# section uses the constructs that keep docutils' parser and writer busy:
# inline markup, hyperlink targets, nested lists, footnotes, grid tables,
# definition lists, literal blocks, and a table of contents over them all.
import sys
n = int(sys.argv[1])
out = ["=================\nGenerated manual\n=================\n", ".. contents::\n"]
for i in range(n):
    out.append("Section %d\n%s\n" % (i, "=" * (len(str(i)) + 8)))
    out.append("Some *emphasis*, **strong**, ``literal`` and a link_%d to `Python <https://python.org/>`_.\n" % i)
    out.append(".. _link_%d: https://example.org/%d\n" % (i, i))
    out.append("Sub %d\n%s\n" % (i, "-" * (len(str(i)) + 4)))
    out.append("- item one with *markup*\n\n  - nested item\n  - another [#]_\n\n- item two\n")
    out.append(".. [#] A footnote %d.\n" % i)
    out.append("+-------+-------+\n| a %3d | b     |\n+=======+=======+\n| c     | d     |\n+-------+-------+\n" % (i % 1000))
    out.append("term %d\n    Definition with ``code``.\n" % i)
    out.append("::\n\n    def f(x):\n        return x\n")
print("\n".join(out))
