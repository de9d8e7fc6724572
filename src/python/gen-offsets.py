#!/usr/bin/python3
"""Generate src/python/pyoffsets_table.c from CPython's own debug info.

The BPF walk and the symbolizer read CPython structures at fixed offsets.
Typing those offsets in by hand is how profilers silently break, so this
script asks gdb for them, from the DWARF of each interpreter's libpython:

    print &((struct _ts *)0)->next       ->  offset of a field
    print sizeof(PyASCIIObject)          ->  size of a type

Usage:
    gen-offsets.py [--output FILE] LIB...   write the table (one LIB per
                                            minor version, 3.6 .. 3.13)
    gen-offsets.py --check [LIB...]         compare LIBs (default: every
                                            libpython under the pyenv root)
                                            with the committed table

--check exits 0 when everything matches, 1 on a mismatch (printing the
differing fields by name, and a unified diff of the whole file when every
interpreter it came from is present), 77 when gdb or every interpreter is
missing.  Standard library only: it runs before the project is built.
"""

import argparse
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TABLE = os.path.join(HERE, "pyoffsets_table.c")
DEFAULT_PYENV_ROOT = "/root/.pyenv"
EXIT_SKIP = 77          # automake's "test skipped"

NO_FIELD = "PYPERF_NO_FIELD"    # u16 offsets (walk, code)
NO_FIELD32 = "0xffffffff"       # u32 offsets (runtime_*)
FIRST_MINOR, LAST_MINOR = 6, 13

# Type names as the DWARF spells them; these spellings exist in every
# version 3.6 .. 3.13 (typedef or struct tag), so the rules below only
# need to vary the member names.
TS = "struct _ts"
IS = "struct _is"
RUNTIME = "_PyRuntimeState"
FRAME_OBJ = "PyFrameObject"
IFRAME = "struct _PyInterpreterFrame"
CODE = "PyCodeObject"
GIL = "struct _gil_runtime_state"
KEYS = "PyDictKeysObject"


def off(ctype, member):
    """gdb expression for offsetof(ctype, member); member may be a.b."""
    return "(unsigned long)&((%s *)0)->%s" % (ctype, member)


def size(ctype):
    return "(unsigned long)sizeof(%s)" % ctype


def const(value):
    """A value fixed per version family, not read from debug info."""
    return ("const", value)


# One row per struct py_layout field, in declaration order:
#   (field, kind, rules)
# kind is "u32" or "u16" (decides the NO_FIELD spelling and range), or
# "enum" for constants.  rules are (first_minor, last_minor, what); a
# version outside every rule gets NO_FIELD.  Inside a rule the field is
# required: if gdb cannot resolve it, generation fails instead of
# silently writing NO_FIELD.  "what" may be ("optional", expr): that
# field is probed and is NO_FIELD where the member does not exist.
FIELDS = [
    # 3.6 has no _PyRuntime: the globals interp_head and
    # _PyThreadState_Current are used instead.
    ("runtime_interp_head", "u32",
     [(7, 13, off(RUNTIME, "interpreters.head"))]),
    # 3.12 dropped gilstate.tstate_current (the current tstate is a
    # thread-local there).
    ("runtime_gil_holder", "u32",
     [(7, 11, off(RUNTIME, "gilstate.tstate_current"))]),
    # Moved into struct pythreads in 3.11 (not 3.12).
    ("walk.interp_tstate_head", "u16", [(6, 10, off(IS, "tstate_head")),
                                        (11, 13, off(IS, "threads.head"))]),
    ("walk.ts_next", "u16", [(6, 13, off(TS, "next"))]),
    ("walk.ts_frame", "u16", [(6, 10, off(TS, "frame")),
                              (11, 12, off(TS, "cframe")),
                              (13, 13, off(TS, "current_frame"))]),
    ("walk.cframe_current_frame", "u16",
     [(11, 12, off("_PyCFrame", "current_frame"))]),
    ("walk.ts_thread_id", "u16", [(6, 13, off(TS, "thread_id"))]),
    # Probed rather than ranged: the brief is "use it where it exists".
    ("walk.ts_native_thread_id", "u16",
     [(6, 13, ("optional", off(TS, "native_thread_id")))]),
    ("walk.frame_back", "u16", [(6, 10, off(FRAME_OBJ, "f_back")),
                                (11, 13, off(IFRAME, "previous"))]),
    ("walk.frame_code", "u16", [(6, 10, off(FRAME_OBJ, "f_code")),
                                (11, 12, off(IFRAME, "f_code")),
                                (13, 13, off(IFRAME, "f_executable"))]),
    ("walk.frame_lasti", "u16", [(6, 10, off(FRAME_OBJ, "f_lasti")),
                                 (11, 12, off(IFRAME, "prev_instr")),
                                 (13, 13, off(IFRAME, "instr_ptr"))]),
    # 3.11 has owner too, but without FRAME_OWNED_BY_CSTACK; the entry
    # comment lists each version's owner values.
    ("walk.frame_owner", "u16", [(11, 13, off(IFRAME, "owner"))]),
    # Before 3.11 there is no co_qualname: the first local of a method
    # (self or cls) gives its class.
    ("walk.frame_localsplus", "u16", [(6, 10, off(FRAME_OBJ, "f_localsplus"))]),
    # 3.11 marks the first frame of each eval-loop call with is_entry;
    # 3.12+ pushes a C-stack shim frame instead (owner 3).
    ("walk.frame_is_entry", "u16", [(11, 11, off(IFRAME, "is_entry"))]),
    ("walk.frame_kind", "enum", [(6, 10, const("PY_FRAMES_OBJECT")),
                                 (11, 12, const("PY_FRAMES_CFRAME")),
                                 (13, 13, const("PY_FRAMES_DIRECT"))]),
    ("walk.tid_kind", "enum", [(6, 10, const("PY_TID_PTHREAD")),
                               (11, 13, const("PY_TID_NATIVE"))]),
    ("walk.code_tag_mask", "enum", [(6, 13, const("0"))]),
    ("code.co_filename", "u16", [(6, 13, off(CODE, "co_filename"))]),
    ("code.co_name", "u16", [(6, 13, off(CODE, "co_name"))]),
    ("code.co_qualname", "u16", [(11, 13, off(CODE, "co_qualname"))]),
    ("code.co_firstlineno", "u16", [(6, 13, off(CODE, "co_firstlineno"))]),
    ("code.co_linetable", "u16", [(6, 9, off(CODE, "co_lnotab")),
                                  (10, 13, off(CODE, "co_linetable"))]),
    ("code.co_code_adaptive", "u16", [(11, 13, off(CODE, "co_code_adaptive"))]),
    ("code.co_argcount", "u16", [(6, 13, off(CODE, "co_argcount"))]),
    # 3.11+ has co_localsplusnames instead; not used.
    ("code.co_varnames", "u16", [(6, 10, off(CODE, "co_varnames"))]),
    ("code.unicode_state", "u16", [(6, 13, off("PyASCIIObject", "state"))]),
    ("code.unicode_length", "u16", [(6, 13, off("PyASCIIObject", "length"))]),
    ("code.unicode_ascii_size", "u16", [(6, 13, size("PyASCIIObject"))]),
    ("code.unicode_compact_size", "u16",
     [(6, 13, size("PyCompactUnicodeObject"))]),
    ("code.bytes_size", "u16", [(6, 13, off("PyVarObject", "ob_size"))]),
    ("code.bytes_sval", "u16", [(6, 13, off("PyBytesObject", "ob_sval"))]),
    ("code.tuple_items", "u16", [(6, 13, off("PyTupleObject", "ob_item"))]),
    ("code.ob_type", "u16", [(6, 13, off("PyObject", "ob_type"))]),
    ("code.type_name", "u16", [(6, 13, off("PyTypeObject", "tp_name"))]),
    # ---- struct py_gil_offsets: where the GIL is and who holds it ----
    # 3.6 has no struct: static gil_locked / gil_last_holder in ceval.c,
    # found by their (local) ELF symbols at run time.  3.7-3.11 keep the
    # one GIL in _PyRuntime.ceval.gil; 3.12 moved it to the interpreter
    # (interp->ceval.gil points to it; the main interpreter's own
    # storage is interp->_gil).
    ("gil.runtime_gil", "u32", [(7, 11, off(RUNTIME, "ceval.gil"))]),
    ("gil.interp_ceval_gil", "u16", [(12, 13, off(IS, "ceval.gil"))]),
    ("gil.interp_gil", "u16", [(12, 13, off(IS, "_gil"))]),
    ("gil.locked", "u16", [(7, 13, off(GIL, "locked"))]),
    ("gil.last_holder", "u16", [(7, 13, off(GIL, "last_holder"))]),
    # ---- struct py_object_offsets: attributes, dicts, ints ----
    ("obj.ts_interp", "u16", [(6, 13, off(TS, "interp"))]),
    # sys.modules; 3.12 moved it into struct _import_state.
    ("obj.interp_modules", "u16", [(6, 11, off(IS, "modules")),
                                   (12, 13, off(IS, "imports.modules"))]),
    ("obj.module_dict", "u16", [(6, 13, off("PyModuleObject", "md_dict"))]),
    ("obj.type_flags", "u16", [(6, 13, off("PyTypeObject", "tp_flags"))]),
    ("obj.type_basicsize", "u16",
     [(6, 13, off("PyTypeObject", "tp_basicsize"))]),
    ("obj.type_dictoffset", "u16",
     [(6, 13, off("PyTypeObject", "tp_dictoffset"))]),
    ("obj.heaptype_cached_keys", "u16",
     [(6, 13, off("PyHeapTypeObject", "ht_cached_keys"))]),
    ("obj.dict_used", "u16", [(6, 13, off("PyDictObject", "ma_used"))]),
    ("obj.dict_keys", "u16", [(6, 13, off("PyDictObject", "ma_keys"))]),
    ("obj.dict_values", "u16", [(6, 13, off("PyDictObject", "ma_values"))]),
    # 3.11 replaced dk_size by its log2 and added the key kind, which
    # decides the entry type (PyDictUnicodeEntry has no hash).
    ("obj.dk_size", "u16", [(6, 10, off(KEYS, "dk_size"))]),
    ("obj.dk_log2_size", "u16", [(11, 13, off(KEYS, "dk_log2_size"))]),
    ("obj.dk_log2_index_bytes", "u16",
     [(11, 13, off(KEYS, "dk_log2_index_bytes"))]),
    ("obj.dk_kind", "u16", [(11, 13, off(KEYS, "dk_kind"))]),
    ("obj.dk_kind_general", "u16",
     [(11, 13, "(unsigned long)DICT_KEYS_GENERAL")]),
    ("obj.dk_nentries", "u16", [(6, 13, off(KEYS, "dk_nentries"))]),
    ("obj.dk_indices", "u16", [(6, 13, off(KEYS, "dk_indices"))]),
    ("obj.entry_size", "u16", [(6, 13, size("PyDictKeyEntry"))]),
    ("obj.entry_hash", "u16", [(6, 13, off("PyDictKeyEntry", "me_hash"))]),
    ("obj.entry_key", "u16", [(6, 13, off("PyDictKeyEntry", "me_key"))]),
    ("obj.entry_value", "u16", [(6, 13, off("PyDictKeyEntry", "me_value"))]),
    ("obj.uentry_size", "u16", [(11, 13, size("PyDictUnicodeEntry"))]),
    ("obj.uentry_key", "u16",
     [(11, 13, off("PyDictUnicodeEntry", "me_key"))]),
    ("obj.uentry_value", "u16",
     [(11, 13, off("PyDictUnicodeEntry", "me_value"))]),
    # <=3.10 ma_values is the PyObject *[] itself.
    ("obj.values_values", "u16", [(11, 13, off("PyDictValues", "values"))]),
    ("obj.values_valid", "u16", [(13, 13, off("PyDictValues", "valid"))]),
    # 3.12 replaced ob_size by long_value.lv_tag.
    ("obj.long_size", "u16",
     [(6, 11, off("PyLongObject", "ob_base.ob_size")),
      (12, 13, off("PyLongObject", "long_value.lv_tag"))]),
    ("obj.long_digit", "u16",
     [(6, 11, off("PyLongObject", "ob_digit")),
      (12, 13, off("PyLongObject", "long_value.ob_digit"))]),
    # Not in the debug info (inline functions and macros of
    # Include/internal/pycore_object.h): MANAGED_DICT_OFFSET is
    # -3 * sizeof(PyObject *) in 3.11-3.13 (GIL builds);
    # _PyObject_ValuesPointer() is obj - 4 pointers in 3.11 only.
    ("obj.managed_dict", "enum", [(6, 10, const("0")),
                                  (11, 13, const("-24"))]),
    ("obj.managed_values", "enum", [(6, 10, const("0")),
                                    (11, 11, const("-32")),
                                    (12, 13, const("0"))]),
    ("obj.managed_kind", "enum", [(6, 10, const("PY_MANAGED_NONE")),
                                  (11, 11, const("PY_MANAGED_VALUES_PTR")),
                                  (12, 12, const("PY_MANAGED_TAGGED")),
                                  (13, 13, const("PY_MANAGED_INLINE"))]),
    ("obj.long_kind", "enum", [(6, 11, const("PY_LONG_OB_SIZE")),
                               (12, 13, const("PY_LONG_LV_TAG"))]),
    # Include/object.h: Py_TPFLAGS_MANAGED_DICT (1 << 4) from 3.11,
    # Py_TPFLAGS_INLINE_VALUES (1 << 2) from 3.13.
    ("obj.tpflag_managed_dict", "enum", [(6, 10, const("0")),
                                         (11, 13, const("0x10"))]),
    ("obj.tpflag_inline_values", "enum", [(6, 12, const("0")),
                                          (13, 13, const("0x4"))]),
]

# 3.13+ embeds its own offsets in _PyRuntime.debug_offsets; gdb reads
# the initialised data from the file, so every 3.13+ entry is also
# cross-checked against what CPython itself publishes.
DEBUG_OFFSETS = {
    "runtime_interp_head": "runtime_state.interpreters_head",
    "walk.interp_tstate_head": "interpreter_state.threads_head",
    "walk.ts_next": "thread_state.next",
    "walk.ts_frame": "thread_state.current_frame",
    "walk.ts_thread_id": "thread_state.thread_id",
    "walk.ts_native_thread_id": "thread_state.native_thread_id",
    "walk.frame_back": "interpreter_frame.previous",
    "walk.frame_code": "interpreter_frame.executable",
    "walk.frame_lasti": "interpreter_frame.instr_ptr",
    "walk.frame_owner": "interpreter_frame.owner",
    "code.co_filename": "code_object.filename",
    "code.co_name": "code_object.name",
    "code.co_qualname": "code_object.qualname",
    "code.co_firstlineno": "code_object.firstlineno",
    "code.co_linetable": "code_object.linetable",
    "code.co_code_adaptive": "code_object.co_code_adaptive",
    "code.co_argcount": "code_object.argcount",
    "code.unicode_state": "unicode_object.state",
    "code.unicode_length": "unicode_object.length",
    "code.unicode_ascii_size": "unicode_object.asciiobject_size",
    "code.bytes_size": "bytes_object.ob_size",
    "code.bytes_sval": "bytes_object.ob_sval",
    "code.tuple_items": "tuple_object.ob_item",
    "code.ob_type": "pyobject.ob_type",
    "code.type_name": "type_object.tp_name",
    "gil.interp_ceval_gil": "interpreter_state.ceval_gil",
    "gil.interp_gil": "interpreter_state.gil_runtime_state",
    # The table gives locked and holder as offsets in PyInterpreterState
    # (of interp->_gil); relative to the GIL struct they are differences.
    "gil.locked": ("interpreter_state.gil_runtime_state_locked",
                   "interpreter_state.gil_runtime_state"),
    "gil.last_holder": ("interpreter_state.gil_runtime_state_holder",
                        "interpreter_state.gil_runtime_state"),
    "obj.ts_interp": "thread_state.interp",
    "obj.interp_modules": "interpreter_state.imports_modules",
    "obj.type_flags": "type_object.tp_flags",
    "obj.dict_keys": "dict_object.ma_keys",
    "obj.dict_values": "dict_object.ma_values",
    "obj.long_size": "long_object.lv_tag",
    "obj.long_digit": "long_object.ob_digit",
}


def debug_expr(dbg):
    """gdb expression for a DEBUG_OFFSETS value: a field of
    _PyRuntime.debug_offsets, or (a, b) for the difference a - b."""
    if isinstance(dbg, tuple):
        return "(unsigned long)(_PyRuntime.debug_offsets.%s" \
            " - _PyRuntime.debug_offsets.%s)" % dbg
    return "(unsigned long)_PyRuntime.debug_offsets." + dbg

# enum _frameowner members, recorded in the entry comment because their
# meaning moved between 3.11 and 3.12 (CSTACK was added).
OWNER_NAMES = ["THREAD", "GENERATOR", "FRAME_OBJECT", "CSTACK", "INTERPRETER"]


class GenError(Exception):
    """An interpreter that cannot be turned into a table entry."""


class Skip(Exception):
    """An interpreter --check cannot judge (no debug info, no entry...)."""


class Interp:
    """One libpython and the version it belongs to."""

    def __init__(self, path, pyenv_root):
        self.path = path
        self.name = os.path.basename(path)
        m = re.match(r"libpython(\d+)\.(\d+)(m?)\.so$", self.name)
        if not m:
            # t (free-threaded) and d (debug) builds have other layouts.
            raise Skip("not a default-ABI libpython: %s" % self.name)
        self.major, self.minor = int(m.group(1)), int(m.group(2))
        root = os.path.join(os.path.abspath(pyenv_root), "")
        absp = os.path.abspath(path)
        # Shown relative to the pyenv root so a regenerated file does
        # not differ just because the maintainer's root differs.
        self.shown = ("$PYENV_ROOT/" + absp[len(root):]
                      if absp.startswith(root) else absp)
        self.hexversion = None

    @property
    def version(self):
        h = self.hexversion
        s = "%d.%d.%d" % (h >> 24, (h >> 16) & 0xff, (h >> 8) & 0xff)
        level = {0xa: "a", 0xb: "b", 0xc: "rc"}.get((h >> 4) & 0xf)
        return s + ("%s%d" % (level, h & 0xf) if level else "")

    @property
    def source(self):
        return "%s %s" % (self.version, self.name)


# -nx: no user gdbinit may change the answers.  debuginfod off: a library
# without debug info must be reported, not fetched from the network.
GDB = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]


def gdb_eval(path, exprs):
    """Evaluate {key: expr} in gdb on path; return {key: int} for those
    that resolved.  One gdb run for all: each one costs ~1 s.  printf
    keeps every answer on its own tagged line, and an unresolvable
    expression just leaves its key out (gdb -batch goes on after it)."""
    cmd = GDB[:]
    for key, expr in exprs.items():
        cmd += ["-ex", 'printf "@@%s=%%lu\\n", %s' % (key, expr)]
    cmd.append(path)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, check=False).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"@@(\S+)=(\d+)$", line)
        if m:
            found[m.group(1)] = int(m.group(2))
    return found


def gdb_error(path, expr):
    """gdb's own message for one expression, to say why it failed."""
    r = subprocess.run(GDB + ["-ex", "print " + expr, path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, check=False)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    return lines[-1] if lines else "no answer"


def read_hexversion(interp):
    """PY_VERSION_HEX of the library.  3.11+ exports Py_Version, which gdb
    reads from the file; older versions only know it at run time, so ask
    the interpreter installed next to the library (never a shim)."""
    got = gdb_eval(interp.path, {"v": "(unsigned long)Py_Version"})
    if "v" in got:
        return got["v"]
    exe = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(interp.path))), "bin",
        "python%d.%d" % (interp.major, interp.minor))
    if not os.access(exe, os.X_OK):
        raise GenError("%s: no Py_Version symbol and no %s to ask"
                       % (interp.path, exe))
    r = subprocess.run([exe, "-E", "-S", "-c",
                        "import sys; print(sys.hexversion)"],
                       stdout=subprocess.PIPE, universal_newlines=True,
                       check=False)
    if r.returncode != 0 or not r.stdout.strip().isdigit():
        raise GenError("%s: cannot read sys.hexversion" % exe)
    return int(r.stdout)


def rule_for(field_rules, minor):
    for first, last, what in field_rules:
        if first <= minor <= last:
            return what
    return None


def queries_for(interp):
    """The gdb expressions this version needs: {key: (expr, optional)}."""
    q = {}
    for field, kind, rules in FIELDS:
        what = rule_for(rules, interp.minor)
        if what is None or kind == "enum":
            continue
        optional = isinstance(what, tuple) and what[0] == "optional"
        q[field] = (what[1] if optional else what, optional)
    if interp.minor >= 13:
        for field, dbg in DEBUG_OFFSETS.items():
            q["dbg:" + field] = (debug_expr(dbg), False)
    for name in OWNER_NAMES:
        q["owner:" + name] = ("(unsigned long)FRAME_OWNED_BY_" + name, True)
    return q


def read_layout(interp):
    """Return ({field: C text}, owner comment) for one interpreter."""
    if interp.minor < FIRST_MINOR or interp.minor > LAST_MINOR \
            or interp.major != 3:
        raise Skip("no rules for %d.%d" % (interp.major, interp.minor))
    queries = queries_for(interp)
    got = gdb_eval(interp.path, {k: e for k, (e, _) in queries.items()})
    required = [k for k, (_, opt) in queries.items() if not opt]
    if not any(k in got for k in required):
        raise Skip("no debug info (gdb resolved no type)")
    interp.hexversion = read_hexversion(interp)
    if (interp.hexversion >> 16) != (interp.major << 8 | interp.minor):
        raise GenError("%s: library name says %d.%d but it is %s"
                       % (interp.path, interp.major, interp.minor,
                          interp.version))
    missing = [k for k in required if k not in got]
    if missing:
        raise GenError("%s: cannot resolve %s" % (interp.path, "; ".join(
            "%s (%s)" % (k, gdb_error(interp.path, queries[k][0]))
            for k in missing)))
    values = render_values(interp, got)
    cross_check(interp, got)
    owners = ["%s=%d" % (n, got["owner:" + n])
              for n in OWNER_NAMES if "owner:" + n in got]
    return values, " ".join(owners)


def render_values(interp, got):
    """Field values as they will be written in C, NO_FIELD included."""
    values = {}
    for field, kind, rules in FIELDS:
        what = rule_for(rules, interp.minor)
        if kind == "enum":
            values[field] = what[1]
        elif field not in got:
            values[field] = NO_FIELD32 if kind == "u32" else NO_FIELD
        else:
            limit = 0xffffffff if kind == "u32" else 0xffff
            if got[field] >= limit:
                raise GenError("%s: %s = %d does not fit %s"
                               % (interp.path, field, got[field], kind))
            values[field] = str(got[field])
    return values


def cross_check(interp, got):
    """3.13+: DWARF and _Py_DebugOffsets must agree, or one is misread."""
    bad = ["%s: DWARF %d, _Py_DebugOffsets %d" % (f, got[f], got["dbg:" + f])
           for f in DEBUG_OFFSETS
           if "dbg:" + f in got and got.get(f) != got["dbg:" + f]]
    if bad:
        raise GenError("%s: %s" % (interp.path, "; ".join(bad)))


def render_entry(interp, values, owners):
    """One py_layouts[] initializer, designated so field order in
    pyoffsets.h cannot silently shift values."""
    out = ["\t{\t/* %s */" % interp.source,
           "\t\t.version_hex = 0x%08x," % interp.hexversion,
           '\t\t.source = "%s",' % interp.source]
    group = None
    for field, _, _ in FIELDS:
        head, _, name = field.rpartition(".")
        if head != group:
            if group:
                out.append("\t\t},")
            if head:
                out.append("\t\t.%s = {" % head)
            group = head
        indent = "\t\t\t" if head else "\t\t"
        if name == "frame_owner" and owners:
            out.append("%s/* %s */" % (indent, owners))
        out.append("%s.%s = %s," % (indent, name, values[field]))
    if group:
        out.append("\t\t},")
    out.append("\t},")
    return out


HEADER = """\
/* GENERATED FILE - DO NOT EDIT.  Regenerate with src/python/gen-offsets.py.
 *
 * Per-minor-version offsets of the CPython structures pyperf-pprof reads,
 * taken by gdb from the DWARF debug info of these interpreters
 * ($PYENV_ROOT is the pyenv root, by default /root/.pyenv):
 *
%(files)s
 *
 * Regenerate (and review the diff) with:
 *
 *   python3 src/python/gen-offsets.py \\
%(args)s
 *
 * and check it against every installed interpreter with
 * "python3 src/python/gen-offsets.py --check" or tests/check-offsets.sh.
 *
 * PYPERF_NO_FIELD marks a field the version does not have.  The u32
 * runtime_* offsets use 0xffffffff for that: 3.6 has no _PyRuntime (use
 * the globals interp_head and _PyThreadState_Current), and 3.12+ has no
 * gilstate.tstate_current.  3.13+ entries are a fallback: at run time
 * those versions publish their own offsets in _Py_DebugOffsets, and the
 * generator checked that both agree.  frame_owner values differ by
 * version (3.11 has no CSTACK): the comment above each frame_owner
 * lists that version's FRAME_OWNED_BY_* values.
 *
 * gil: where struct _gil_runtime_state is (3.6 has none: static
 * gil_locked and gil_last_holder in ceval.c).  obj: what reading an
 * object's attribute takes (thread names, src/python/pythread.c); its signed
 * and enum fields are not in the debug info but transcribed from
 * CPython's headers (see gen-offsets.py), and use 0 for "none".  A
 * _Py_DebugOffsets layout has only some obj fields; src/python/pythread.c
 * takes the others from the entry here of the same minor version.
 */

#include <stddef.h>

#include "pyoffsets.h"

const struct py_layout py_layouts[] = {
"""

FOOTER = """\
};

const unsigned py_layouts_count = sizeof(py_layouts) / sizeof(py_layouts[0]);

const struct py_layout *py_layout_find(unsigned major, unsigned minor)
{
	unsigned i;

	for (i = 0; i < py_layouts_count; i++) {
		uint32_t v = py_layouts[i].version_hex;

		if (v >> 24 == major && (v >> 16 & 0xff) == minor)
			return &py_layouts[i];
	}
	return NULL;
}
"""


def render_file(layouts):
    """layouts: [(interp, values, owners)], one per minor version."""
    layouts = sorted(layouts, key=lambda l: l[0].hexversion)
    files = "\n".join(" *   %-8s %s" % (i.version, i.shown)
                      for i, _, _ in layouts)
    args = " \\\n".join(" *\t%s" % i.shown for i, _, _ in layouts)
    body = []
    for interp, values, owners in layouts:
        body += render_entry(interp, values, owners)
    return (HEADER % {"files": files, "args": args}
            + "\n".join(body) + "\n" + FOOTER)


def parse_table(text):
    """{(major, minor): {field: text}} from a file render_file wrote.  It
    only needs to read this script's own output, so it goes by lines."""
    entries, cur, group = {}, None, ""
    for line in text.splitlines():
        if re.match(r"\t\{\t/\*", line):
            cur, group = {}, ""
        elif cur is None:
            continue
        elif re.match(r"\t\t\.(\w+) = \{$", line):
            group = re.match(r"\t\t\.(\w+)", line).group(1) + "."
        elif line == "\t\t},":
            group = ""
        elif line == "\t},":
            h = int(cur["version_hex"], 16)
            entries[(h >> 24, h >> 16 & 0xff)] = cur
            cur = None
        else:
            m = re.match(r"\t+\.(\w+) = (.*),$", line)
            if m:
                cur[group + m.group(1)] = m.group(2).strip('"')
    return entries


def version_key(path):
    """Sort 3.6 before 3.10: by the numbers in the path, not its text."""
    return [int(n) if n.isdigit() else n for n in re.split(r"(\d+)", path)]


def find_libs(pyenv_root):
    """Every libpython3.X under the pyenv root.  The glob leaves out
    libpython3.so, the stable-ABI stub, which has no layout of its own."""
    pattern = os.path.join(pyenv_root, "versions", "*", "lib",
                           "libpython3.*.so")
    return sorted(glob.glob(pattern), key=version_key)


def generate(args):
    """Write the table from exactly the libraries given, one per minor."""
    layouts, seen = [], {}
    for path in sorted(args.libs, key=version_key):
        interp = Interp(path, args.pyenv_root)
        values, owners = read_layout(interp)
        minor = (interp.major, interp.minor)
        if minor in seen:
            raise GenError("two libraries for %d.%d: %s and %s; give one"
                           % (minor + (seen[minor], path)))
        seen[minor] = path
        layouts.append((interp, values, owners))
        print("%-8s %s" % (interp.version, path))
    text = render_file(layouts)
    with open(args.table, "w") as f:
        f.write(text)
    print("wrote %s (%d entries)" % (args.table, len(layouts)))
    return 0


def compare_entry(values, committed):
    """Names and both values of the fields that differ."""
    return ["%s: committed %s, debug info %s"
            % (f, committed.get(f, "(absent)"), values[f])
            for f, _, _ in FIELDS if committed.get(f) != values[f]]


def check_one(path, args, committed):
    """Print one interpreter's verdict; return (status, layout or None)
    with status "ok", "bad" or "skip"; layout is None when unreadable."""
    try:
        interp = Interp(path, args.pyenv_root)
        values, owners = read_layout(interp)
    except Skip as e:
        print("SKIP     %s: %s" % (path, e))
        return "skip", None
    except GenError as e:
        print("FAIL     %s" % e)
        return "bad", None
    entry = committed.get((interp.major, interp.minor))
    label = "%-8s %s" % (interp.version, path)
    if entry is None:
        print("FAIL     %s: the table has no %d.%d entry"
              % (label, interp.major, interp.minor))
        return "bad", None
    diffs = compare_entry(values, entry)
    if diffs:
        print("MISMATCH %s vs the %d.%d entry from %s:"
              % (label, interp.major, interp.minor, entry["source"]))
        for d in diffs:
            print("           " + d)
    else:
        print("OK       %s matches the %d.%d entry from %s"
              % (label, interp.major, interp.minor, entry["source"]))
    # Returned even on a mismatch: the whole-file diff shows it in context.
    return "bad" if diffs else "ok", (interp, values, owners)


def diff_whole_file(layouts, committed, text, table):
    """When the committed file came from interpreters that are all here,
    regenerate it and diff: this also catches edits to comments, the
    header or py_layout_find.  Return True when it differs."""
    sources = {e["source"] for e in committed.values()}
    chosen = {l[0].source: l for l in layouts if l[0].source in sources}
    if set(chosen) != sources:
        versions = sorted((s.split()[0] for s in sources), key=version_key)
        print("note: no whole-file diff: the table comes from %s, and"
              " not all of those are here" % " ".join(versions))
        return False
    fresh = render_file(list(chosen.values()))
    if fresh == text:
        print("OK       %s is what gen-offsets.py generates" % table)
        return False
    print("DIFF     %s differs from a fresh generation:" % table)
    sys.stdout.writelines(difflib.unified_diff(
        text.splitlines(True), fresh.splitlines(True),
        table + " (committed)", table + " (regenerated)"))
    return True


def check(args):
    if shutil.which("gdb") is None:
        print("SKIP: gdb is not installed; it reads the offsets")
        return EXIT_SKIP
    libs = args.libs or find_libs(args.pyenv_root)
    libs = [p for p in libs if os.path.exists(p)]
    if not libs:
        print("SKIP: no CPython library found (looked under %s/versions)"
              % args.pyenv_root)
        return EXIT_SKIP
    try:
        with open(args.table) as f:
            text = f.read()
    except OSError as e:
        print("FAIL: cannot read the committed table: %s" % e)
        return 1
    committed = parse_table(text)
    results = [check_one(p, args, committed) for p in libs]
    if all(status == "skip" for status, _ in results):
        print("SKIP: no interpreter could be checked")
        return EXIT_SKIP
    bad = any(status == "bad" for status, _ in results)
    layouts = [l for _, l in results if l is not None]
    if diff_whole_file(layouts, committed, text, args.table):
        bad = True
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(
        description="Generate or check the CPython offset table "
        "(src/python/pyoffsets_table.c) from interpreters' debug info.")
    ap.add_argument("libs", nargs="*", metavar="LIB",
                    help="libpython3.X[m].so with debug info")
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed table instead of"
                    " writing it (default LIBs: all under the pyenv root)")
    ap.add_argument("--output", "--table", dest="table",
                    default=DEFAULT_TABLE,
                    help="table to write or check (default %(default)s)")
    ap.add_argument("--pyenv-root",
                    default=os.environ.get("PYENV_ROOT") or DEFAULT_PYENV_ROOT,
                    help="where pyenv keeps versions/ (default $PYENV_ROOT"
                    " or %s)" % DEFAULT_PYENV_ROOT)
    args = ap.parse_args()
    if args.check:
        return check(args)
    if not args.libs:
        ap.error("give one LIB per minor version (see the table's header)")
    if shutil.which("gdb") is None:
        ap.error("gdb is required")
    try:
        return generate(args)
    except (GenError, Skip) as e:
        print("gen-offsets.py: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
