# Two classes share a method name; a classmethod too. Profiles must keep
# Parser.run and Encoder.run apart on every Python version.
import sys
import time


def spin(n):
    total = 0
    for i in range(n):
        total += i
    return total


class Parser(object):
    def run(self):
        return spin(20000)


class Encoder(object):
    def run(self):
        return spin(20000)

    @classmethod
    def build(cls):
        return spin(20000)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    end = time.time() + seconds
    p, e = Parser(), Encoder()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while time.time() < end:
        p.run()
        e.run()
        Encoder.build()


if __name__ == "__main__":
    main()
