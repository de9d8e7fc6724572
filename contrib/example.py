"""The bundled example: a small program with an obvious profile.

A JSON-ish report generator: parsing dominates, formatting is cheaper,
and a method name is shared by two classes.
"""
import sys
import time


class Parser(object):
    def run(self, text):
        fields = []
        for line in text.splitlines():
            key, _, value = line.partition("=")
            fields.append((key.strip(), value.strip()))
        return fields


class Formatter(object):
    def run(self, fields):
        return ",".join("%s:%s" % kv for kv in fields)


def make_input(n):
    return "\n".join("key%d = value%d" % (i, i * i) for i in range(n))


def report(text):
    fields = Parser().run(text)
    return Formatter().run(fields)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    end = time.time() + seconds
    text = make_input(2000)
    while time.time() < end:
        report(text)


if __name__ == "__main__":
    main()
