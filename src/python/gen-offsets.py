#!/usr/bin/python3
"""Generate src/python/pyoffsets_table.c from CPython's own debug info.

The BPF walk and the symbolizer read CPython structures at fixed offsets.
Typing those offsets in by hand is how profilers silently break, so this
script asks gdb for them, from the DWARF of each interpreter's libpython
(or of an executable linked statically with it, such as Debian's
/usr/bin/python3.X, whose separate debug file gdb finds by build id under
--debug-dir):

    print &((struct _ts *)0)->next       ->  offset of a field
    print sizeof(PyASCIIObject)          ->  size of a type

Usage:
    gen-offsets.py [--output FILE] [--debug-dir DIR] LIB...
                        write the table (one LIB per minor version and
                        build, 3.6 .. 3.15; a name with "t", as in
                        libpython3.14t.so, is a free-threaded build)
    gen-offsets.py --check [--debug-dir DIR] [LIB...]
                        compare LIBs (default: every libpython under the
                        pyenv root, python3.14/3.15 of the sid chroot, and
                        the free-threaded builds under --ft-root)
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
DEFAULT_SID_ROOT = "/var/cache/pyperf-pprof/sid"
# Free-threaded builds from CPython's release tags, one prefix per build
# (3.13t/, 3.14t/, 3.15t/), configured --disable-gil --enable-shared with
# debug info: no distribution ships one with DWARF the suite could use.
DEFAULT_FT_ROOT = "/opt/cpython-ft"
# How the maintainer got the debug files of the sid interpreters, for the
# table's header (Debian does not serve them through the chroot's apt
# sources the suite uses, and they are never installed there).
SID_DEBUG_NOTE = """\
$PYPERF_SID_DEBUG: usr/lib/debug of
 * python3.14-dbg_3.14.10-1_amd64.deb and python3.15-dbg_3.15.2-1_amd64.deb
 * from Debian sid, the versions of the chroot's python3.14 and python3.15,
 * unpacked with dpkg-deb -x"""
EXIT_SKIP = 77          # automake's "test skipped"

NO_FIELD = "PYPERF_NO_FIELD"    # u16 offsets (walk, code)
NO_FIELD32 = "0xffffffff"       # u32 offsets (runtime_*)
FIRST_MINOR, LAST_MINOR = 6, 15

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


def by_build(gil, ft):
    """A constant that differs between GIL and free-threaded builds."""
    return ("build", gil, ft)


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
     [(7, 15, off(RUNTIME, "interpreters.head"))]),
    # 3.12 dropped gilstate.tstate_current (the current tstate is a
    # thread-local there).
    ("runtime_gil_holder", "u32",
     [(7, 11, off(RUNTIME, "gilstate.tstate_current"))]),
    # Moved into struct pythreads in 3.11 (not 3.12).
    ("walk.interp_tstate_head", "u16", [(6, 10, off(IS, "tstate_head")),
                                        (11, 15, off(IS, "threads.head"))]),
    ("walk.ts_next", "u16", [(6, 15, off(TS, "next"))]),
    ("walk.ts_frame", "u16", [(6, 10, off(TS, "frame")),
                              (11, 12, off(TS, "cframe")),
                              (13, 15, off(TS, "current_frame"))]),
    ("walk.cframe_current_frame", "u16",
     [(11, 12, off("_PyCFrame", "current_frame"))]),
    ("walk.ts_thread_id", "u16", [(6, 15, off(TS, "thread_id"))]),
    # Probed rather than ranged: the brief is "use it where it exists".
    ("walk.ts_native_thread_id", "u16",
     [(6, 15, ("optional", off(TS, "native_thread_id")))]),
    ("walk.frame_back", "u16", [(6, 10, off(FRAME_OBJ, "f_back")),
                                (11, 15, off(IFRAME, "previous"))]),
    ("walk.frame_code", "u16", [(6, 10, off(FRAME_OBJ, "f_code")),
                                (11, 12, off(IFRAME, "f_code")),
                                (13, 15, off(IFRAME, "f_executable"))]),
    ("walk.frame_lasti", "u16", [(6, 10, off(FRAME_OBJ, "f_lasti")),
                                 (11, 12, off(IFRAME, "prev_instr")),
                                 (13, 15, off(IFRAME, "instr_ptr"))]),
    # 3.11 has owner too, but without FRAME_OWNED_BY_CSTACK; the entry
    # comment lists each version's owner values.
    ("walk.frame_owner", "u16", [(11, 15, off(IFRAME, "owner"))]),
    # Before 3.11 there is no co_qualname: the first local of a method
    # (self or cls) gives its class.
    ("walk.frame_localsplus", "u16", [(6, 10, off(FRAME_OBJ, "f_localsplus"))]),
    # 3.11 marks the first frame of each eval-loop call with is_entry;
    # 3.12+ pushes a C-stack shim frame instead (owner 3).
    ("walk.frame_is_entry", "u16", [(11, 11, off(IFRAME, "is_entry"))]),
    ("walk.frame_kind", "enum", [(6, 10, const("PY_FRAMES_OBJECT")),
                                 (11, 12, const("PY_FRAMES_CFRAME")),
                                 (13, 15, const("PY_FRAMES_DIRECT"))]),
    ("walk.tid_kind", "enum", [(6, 10, const("PY_TID_PTHREAD")),
                               (11, 15, const("PY_TID_NATIVE"))]),
    # 3.14 made f_executable a _PyStackRef (Include/internal/
    # pycore_stackref.h at v3.14.0 and v3.15.0rc1: Py_TAG_BITS 3 in GIL
    # builds; free-threaded 3.14 tags 1 bit, masking 3 is the row's
    # choice for both, src/python/pylayout_rows.c).
    ("walk.code_tag_mask", "enum", [(6, 13, const("0")),
                                    (14, 15, const("3"))]),
    ("code.co_filename", "u16", [(6, 15, off(CODE, "co_filename"))]),
    ("code.co_name", "u16", [(6, 15, off(CODE, "co_name"))]),
    ("code.co_qualname", "u16", [(11, 15, off(CODE, "co_qualname"))]),
    ("code.co_firstlineno", "u16", [(6, 15, off(CODE, "co_firstlineno"))]),
    ("code.co_linetable", "u16", [(6, 9, off(CODE, "co_lnotab")),
                                  (10, 15, off(CODE, "co_linetable"))]),
    ("code.co_code_adaptive", "u16", [(11, 15, off(CODE, "co_code_adaptive"))]),
    ("code.co_argcount", "u16", [(6, 15, off(CODE, "co_argcount"))]),
    # 3.11+ has co_localsplusnames instead; not used.
    ("code.co_varnames", "u16", [(6, 10, off(CODE, "co_varnames"))]),
    ("code.unicode_state", "u16", [(6, 15, off("PyASCIIObject", "state"))]),
    ("code.unicode_length", "u16", [(6, 15, off("PyASCIIObject", "length"))]),
    ("code.unicode_ascii_size", "u16", [(6, 15, size("PyASCIIObject"))]),
    ("code.unicode_compact_size", "u16",
     [(6, 15, size("PyCompactUnicodeObject"))]),
    ("code.bytes_size", "u16", [(6, 15, off("PyVarObject", "ob_size"))]),
    ("code.bytes_sval", "u16", [(6, 15, off("PyBytesObject", "ob_sval"))]),
    ("code.tuple_items", "u16", [(6, 15, off("PyTupleObject", "ob_item"))]),
    ("code.ob_type", "u16", [(6, 15, off("PyObject", "ob_type"))]),
    ("code.type_name", "u16", [(6, 15, off("PyTypeObject", "tp_name"))]),
    # ---- struct py_gil_offsets: where the GIL is and who holds it ----
    # 3.6 has no struct: static gil_locked / gil_last_holder in ceval.c,
    # found by their (local) ELF symbols at run time.  3.7-3.11 keep the
    # one GIL in _PyRuntime.ceval.gil; 3.12 moved it to the interpreter
    # (interp->ceval.gil points to it; the main interpreter's own
    # storage is interp->_gil).
    ("gil.runtime_gil", "u32", [(7, 11, off(RUNTIME, "ceval.gil"))]),
    ("gil.interp_ceval_gil", "u16", [(12, 15, off(IS, "ceval.gil"))]),
    ("gil.interp_gil", "u16", [(12, 15, off(IS, "_gil"))]),
    ("gil.locked", "u16", [(7, 15, off(GIL, "locked"))]),
    ("gil.last_holder", "u16", [(7, 15, off(GIL, "last_holder"))]),
    # ---- struct py_object_offsets: attributes, dicts, ints ----
    ("obj.ts_interp", "u16", [(6, 15, off(TS, "interp"))]),
    # sys.modules; 3.12 moved it into struct _import_state.
    ("obj.interp_modules", "u16", [(6, 11, off(IS, "modules")),
                                   (12, 15, off(IS, "imports.modules"))]),
    ("obj.module_dict", "u16", [(6, 15, off("PyModuleObject", "md_dict"))]),
    ("obj.type_flags", "u16", [(6, 15, off("PyTypeObject", "tp_flags"))]),
    ("obj.type_basicsize", "u16",
     [(6, 15, off("PyTypeObject", "tp_basicsize"))]),
    ("obj.type_dictoffset", "u16",
     [(6, 15, off("PyTypeObject", "tp_dictoffset"))]),
    ("obj.heaptype_cached_keys", "u16",
     [(6, 15, off("PyHeapTypeObject", "ht_cached_keys"))]),
    ("obj.dict_used", "u16", [(6, 15, off("PyDictObject", "ma_used"))]),
    ("obj.dict_keys", "u16", [(6, 15, off("PyDictObject", "ma_keys"))]),
    ("obj.dict_values", "u16", [(6, 15, off("PyDictObject", "ma_values"))]),
    # 3.11 replaced dk_size by its log2 and added the key kind, which
    # decides the entry type (PyDictUnicodeEntry has no hash).
    ("obj.dk_size", "u16", [(6, 10, off(KEYS, "dk_size"))]),
    ("obj.dk_log2_size", "u16", [(11, 15, off(KEYS, "dk_log2_size"))]),
    ("obj.dk_log2_index_bytes", "u16",
     [(11, 15, off(KEYS, "dk_log2_index_bytes"))]),
    ("obj.dk_kind", "u16", [(11, 15, off(KEYS, "dk_kind"))]),
    ("obj.dk_kind_general", "u16",
     [(11, 15, "(unsigned long)DICT_KEYS_GENERAL")]),
    ("obj.dk_nentries", "u16", [(6, 15, off(KEYS, "dk_nentries"))]),
    ("obj.dk_indices", "u16", [(6, 15, off(KEYS, "dk_indices"))]),
    ("obj.entry_size", "u16", [(6, 15, size("PyDictKeyEntry"))]),
    ("obj.entry_hash", "u16", [(6, 15, off("PyDictKeyEntry", "me_hash"))]),
    ("obj.entry_key", "u16", [(6, 15, off("PyDictKeyEntry", "me_key"))]),
    ("obj.entry_value", "u16", [(6, 15, off("PyDictKeyEntry", "me_value"))]),
    ("obj.uentry_size", "u16", [(11, 15, size("PyDictUnicodeEntry"))]),
    ("obj.uentry_key", "u16",
     [(11, 15, off("PyDictUnicodeEntry", "me_key"))]),
    ("obj.uentry_value", "u16",
     [(11, 15, off("PyDictUnicodeEntry", "me_value"))]),
    # <=3.10 ma_values is the PyObject *[] itself.
    ("obj.values_values", "u16", [(11, 15, off("PyDictValues", "values"))]),
    ("obj.values_valid", "u16", [(13, 15, off("PyDictValues", "valid"))]),
    # 3.12 replaced ob_size by long_value.lv_tag.
    ("obj.long_size", "u16",
     [(6, 11, off("PyLongObject", "ob_base.ob_size")),
      (12, 15, off("PyLongObject", "long_value.lv_tag"))]),
    ("obj.long_digit", "u16",
     [(6, 11, off("PyLongObject", "ob_digit")),
      (12, 15, off("PyLongObject", "long_value.ob_digit"))]),
    # Not in the debug info (inline functions and macros of
    # Include/internal/pycore_object.h): MANAGED_DICT_OFFSET is
    # -3 * sizeof(PyObject *) in 3.11-3.15 GIL builds and
    # -1 * sizeof(PyObject *) under Py_GIL_DISABLED (v3.13.0, v3.14.0,
    # v3.14.7, v3.15.0rc1); _PyObject_ValuesPointer() is obj - 4
    # pointers in 3.11 only.
    ("obj.managed_dict", "enum", [(6, 10, const("0")),
                                  (11, 15, by_build("-24", "-8"))]),
    ("obj.managed_values", "enum", [(6, 10, const("0")),
                                    (11, 11, const("-32")),
                                    (12, 15, const("0"))]),
    # 3.14 and 3.15 read an attribute as 3.13 does
    # (_PyObject_GenericGetAttrWithDict in Objects/object.c and
    # _PyObject_TryGetInstanceAttribute in Objects/dictobject.c at
    # v3.14.7 and v3.15.0rc1): inline values while valid, else the
    # managed dict.
    ("obj.managed_kind", "enum", [(6, 10, const("PY_MANAGED_NONE")),
                                  (11, 11, const("PY_MANAGED_VALUES_PTR")),
                                  (12, 12, const("PY_MANAGED_TAGGED")),
                                  (13, 15, const("PY_MANAGED_INLINE"))]),
    ("obj.long_kind", "enum", [(6, 11, const("PY_LONG_OB_SIZE")),
                               (12, 15, const("PY_LONG_LV_TAG"))]),
    # Include/object.h: Py_TPFLAGS_MANAGED_DICT (1 << 4) from 3.11,
    # Py_TPFLAGS_INLINE_VALUES (1 << 2) from 3.13 (the same at v3.14.0,
    # v3.14.7 and v3.15.0rc1).
    ("obj.tpflag_managed_dict", "enum", [(6, 10, const("0")),
                                         (11, 15, const("0x10"))]),
    ("obj.tpflag_inline_values", "enum", [(6, 12, const("0")),
                                          (13, 15, const("0x4"))]),
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

# Fields _Py_DebugOffsets gained later: {field: (first minor, name)}.
DEBUG_OFFSETS_SINCE = {
    "code.unicode_compact_size": (15, "unicode_object.compactunicodeobject_size"),
    "obj.type_basicsize": (15, "type_object.tp_basicsize"),
    "obj.type_dictoffset": (15, "type_object.tp_dictoffset"),
    "obj.heaptype_cached_keys": (15, "heap_type_object.ht_cached_keys"),
}


def debug_offsets_for(minor):
    """{field: _Py_DebugOffsets name} that version publishes (3.13+)."""
    d = dict(DEBUG_OFFSETS) if minor >= 13 else {}
    if minor >= 13:
        d.update({f: name for f, (since, name) in DEBUG_OFFSETS_SINCE.items()
                  if minor >= since})
    return d


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


def build_id(path):
    """The GNU build id of an ELF file (hex), or None.  Read from its
    PT_NOTE segments, or its SHT_NOTE sections (a separate debug file's
    program headers may not cover its notes)."""
    import struct
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None             # 64-bit little-endian only
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    for i in range(min(shnum, 4096)):
        sh = shoff + i * shentsize
        if sh + 64 > len(data):
            break
        stype, = struct.unpack_from("<I", data, sh + 4)
        off, size = struct.unpack_from("<QQ", data, sh + 24)
        pos, end = off, min(off + size, len(data))
        while stype == 7 and pos + 12 <= end:     # SHT_NOTE
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name = data[pos + 12:pos + 12 + namesz]
            desc = pos + 12 + ((namesz + 3) & ~3)
            if ntype == 3 and name == b"GNU\0":    # NT_GNU_BUILD_ID
                return data[desc:desc + descsz].hex()
            pos = desc + ((descsz + 3) & ~3)
    return None


class Interp:
    """One interpreter file holding the layout (a libpython, or an
    executable linked statically like Debian's /usr/bin/python3.X), its
    debug info (in the file, or a separate file found by build id under
    a debug directory), and the version and build it belongs to."""

    def __init__(self, path, roots, debug_dir=None):
        self.path = path
        self.name = os.path.basename(path)
        m = re.match(r"(?:lib)?python(\d+)\.(\d+)(m|t)?(?:\.so)?$", self.name)
        if not m:
            # d (debug) builds have other layouts.
            raise Skip("not a libpython or python3.X file: %s" % self.name)
        self.major, self.minor = int(m.group(1)), int(m.group(2))
        # t: a free-threaded (Py_GIL_DISABLED) build, whose objects have
        # a larger header; its entry is never used for a GIL build.
        self.free_threaded = int(m.group(3) == "t")
        # Shown relative to a root ($PYENV_ROOT, $PYPERF_SID_ROOT) so a
        # regenerated file does not differ just because the
        # maintainer's roots differ.
        self.shown = os.path.abspath(path)
        for var, root in roots:
            root = os.path.join(os.path.abspath(root), "")
            if self.shown.startswith(root):
                self.shown = "$%s/%s" % (var, self.shown[len(root):])
                break
        self.debug_dir = None
        self.debug_file = None
        if debug_dir:
            self.find_debug_file(debug_dir)
        self.hexversion = None

    def find_debug_file(self, debug_dir):
        """A separate debug file of exactly this build, by build id, as
        gdb finds it (DIR/.build-id/xx/yyyy.debug): checked here, so
        the table says which file it came from.  None: the file's own
        debug info (if any) is used."""
        bid = build_id(self.path)
        if not bid:
            return
        cand = os.path.join(debug_dir, ".build-id", bid[:2], bid[2:] + ".debug")
        if not os.path.exists(cand):
            return
        if build_id(cand) != bid:
            raise GenError("%s: %s has build id %s, not %s"
                           % (self.path, cand, build_id(cand), bid))
        self.debug_dir = debug_dir
        self.debug_file = ".build-id/%s/%s.debug" % (bid[:2], bid[2:])

    @property
    def listed(self):
        """How the file is named in the table's header."""
        if self.debug_file:
            return "%s (debug file %s)" % (self.shown, self.debug_file)
        return self.shown

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


def gdb_cmd(interp):
    """gdb on one interpreter file, with its debug directory if any."""
    cmd = GDB[:]
    if interp.debug_dir:
        cmd += ["-iex", "set debug-file-directory " + interp.debug_dir]
    return cmd


def gdb_eval(interp, exprs):
    """Evaluate {key: expr} in gdb on path; return {key: int} for those
    that resolved.  One gdb run for all: each one costs ~1 s.  printf
    keeps every answer on its own tagged line, and an unresolvable
    expression just leaves its key out (gdb -batch goes on after it)."""
    cmd = gdb_cmd(interp)
    for key, expr in exprs.items():
        cmd += ["-ex", 'printf "@@%s=%%lu\\n", %s' % (key, expr)]
    cmd.append(interp.path)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, check=False).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"@@(\S+)=(\d+)$", line)
        if m:
            found[m.group(1)] = int(m.group(2))
    return found


def gdb_error(interp, expr):
    """gdb's own message for one expression, to say why it failed."""
    r = subprocess.run(gdb_cmd(interp) + ["-ex", "print " + expr, interp.path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, check=False)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    return lines[-1] if lines else "no answer"


def read_hexversion(interp):
    """PY_VERSION_HEX of the library.  3.11+ exports Py_Version, which gdb
    reads from the file; older versions only know it at run time, so ask
    the interpreter installed next to the library (never a shim)."""
    got = gdb_eval(interp, {"v": "(unsigned long)Py_Version"})
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
    for field, dbg in debug_offsets_for(interp.minor).items():
        q["dbg:" + field] = (debug_expr(dbg), False)
    # Which build the debug info describes: sizeof(PyObject) is 16 in
    # GIL builds and 32 under Py_GIL_DISABLED (Include/object.h), and
    # 3.13+ also say it in _Py_DebugOffsets.free_threaded.
    q["build:pyobject"] = (size("PyObject"), False)
    if interp.minor >= 13:
        q["build:ft"] = ("(unsigned long)_PyRuntime.debug_offsets"
                         ".free_threaded", False)
    for name in OWNER_NAMES:
        q["owner:" + name] = ("(unsigned long)FRAME_OWNED_BY_" + name, True)
    return q


def read_layout(interp):
    """Return ({field: C text}, owner comment) for one interpreter."""
    if interp.minor < FIRST_MINOR or interp.minor > LAST_MINOR \
            or interp.major != 3:
        raise Skip("no rules for %d.%d" % (interp.major, interp.minor))
    queries = queries_for(interp)
    got = gdb_eval(interp, {k: e for k, (e, _) in queries.items()})
    required = [k for k, (_, opt) in queries.items() if not opt]
    if not any(k in got for k in required):
        raise Skip("no debug info (gdb resolved no type)%s"
                   % ("" if interp.debug_dir else
                      "; a stripped file's debug file is found with"
                      " --debug-dir"))
    interp.hexversion = read_hexversion(interp)
    if (interp.hexversion >> 16) != (interp.major << 8 | interp.minor):
        raise GenError("%s: library name says %d.%d but it is %s"
                       % (interp.path, interp.major, interp.minor,
                          interp.version))
    missing = [k for k in required if k not in got]
    if missing:
        raise GenError("%s: cannot resolve %s" % (interp.path, "; ".join(
            "%s (%s)" % (k, gdb_error(interp, queries[k][0]))
            for k in missing)))
    check_build(interp, got)
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
            values[field] = (what[2 if interp.free_threaded else 1]
                             if what[0] == "build" else what[1])
        elif field not in got:
            values[field] = NO_FIELD32 if kind == "u32" else NO_FIELD
        else:
            limit = 0xffffffff if kind == "u32" else 0xffff
            if got[field] >= limit:
                raise GenError("%s: %s = %d does not fit %s"
                               % (interp.path, field, got[field], kind))
            values[field] = str(got[field])
    return values


def check_build(interp, got):
    """The file's name says GIL or free-threaded; its debug info must
    agree, or the entry would describe the other build's objects."""
    want = 32 if interp.free_threaded else 16
    ft = got.get("build:ft", interp.free_threaded)
    if got["build:pyobject"] != want or ft != interp.free_threaded:
        raise GenError("%s: named like a %s build, but sizeof(PyObject) is"
                       " %d and _Py_DebugOffsets.free_threaded %s"
                       % (interp.path, "free-threaded" if interp.free_threaded
                          else "GIL", got["build:pyobject"],
                          got.get("build:ft", "(none)")))


def cross_check(interp, got):
    """3.13+: DWARF and _Py_DebugOffsets must agree, or one is misread."""
    bad = ["%s: DWARF %d, _Py_DebugOffsets %d" % (f, got[f], got["dbg:" + f])
           for f in debug_offsets_for(interp.minor)
           if "dbg:" + f in got and got.get(f) != got["dbg:" + f]]
    if bad:
        raise GenError("%s: %s" % (interp.path, "; ".join(bad)))


def render_entry(interp, values, owners):
    """One py_layouts[] initializer, designated so field order in
    pyoffsets.h cannot silently shift values."""
    out = ["\t{\t/* %s */" % interp.source,
           "\t\t.version_hex = 0x%08x," % interp.hexversion,
           '\t\t.source = "%s",' % interp.source,
           "\t\t.free_threaded = %d," % interp.free_threaded]
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
 * Per-minor-version and per-build offsets of the CPython structures
 * pyperf-pprof reads, taken by gdb from the DWARF debug info of these
 * interpreters ($PYENV_ROOT is the pyenv root, by default /root/.pyenv;
 * $PYPERF_SID_ROOT the test suite's Debian sid chroot, by default
 * /var/cache/pyperf-pprof/sid, made by contrib/sid-chroot.sh;
 * $PYPERF_FT_ROOT free-threaded builds of CPython's release tags, by
 * default /opt/cpython-ft, one prefix per build (3.13t/ ...) configured
 * with --disable-gil --enable-shared and debug info; a debug
 * file is found by the interpreter's build id under the --debug-dir,
 * %(debug)s):
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
 * gilstate.tstate_current.  3.13+ publish their own offsets in
 * _Py_DebugOffsets at run time, and the generator checked that every
 * field both give agrees; from their entries here the chooser takes only
 * what _Py_DebugOffsets lacks (obj, some of gil), from the entry of the
 * same minor version and build, and only when the target's own table
 * agrees with it on every field both give.  free_threaded: a
 * Py_GIL_DISABLED build ("t"), whose objects have a 32-byte header:
 * py_layout_find() never answers one build with the other's entry.
 * frame_owner values differ by version (3.11 has no CSTACK, 3.14 adds
 * INTERPRETER): the comment above each frame_owner lists that version's
 * FRAME_OWNED_BY_* values.
 *
 * gil: where struct _gil_runtime_state is (3.6 has none: static
 * gil_locked and gil_last_holder in ceval.c).  obj: what reading an
 * object's attribute takes (thread names, src/python/pythread.c); its signed
 * and enum fields are not in the debug info but transcribed from
 * CPython's headers (see gen-offsets.py), and use 0 for "none".  A
 * _Py_DebugOffsets layout has only some obj fields; src/python/pylayout.c
 * takes the others from the entry here of the same minor version and
 * build.
 */

#include <stddef.h>

#include "pyoffsets.h"

const struct py_layout py_layouts[] = {
"""

FOOTER = """\
};

const unsigned py_layouts_count = sizeof(py_layouts) / sizeof(py_layouts[0]);

const struct py_layout *py_layout_find(unsigned major, unsigned minor, int free_threaded)
{
	unsigned i;

	for (i = 0; i < py_layouts_count; i++) {
		uint32_t v = py_layouts[i].version_hex;

		if (v >> 24 == major && (v >> 16 & 0xff) == minor &&
		    py_layouts[i].free_threaded == !!free_threaded)
			return &py_layouts[i];
	}
	return NULL;
}
"""


def render_file(layouts):
    """layouts: [(interp, values, owners)], one per minor version."""
    layouts = sorted(layouts, key=lambda l: (l[0].hexversion,
                                             l[0].free_threaded))
    files = "\n".join(" *   %-8s %s" % (i.version, i.listed)
                      for i, _, _ in layouts)
    args = [i.shown for i, _, _ in layouts]
    if any(i.debug_file for i, _, _ in layouts):
        args.insert(0, "--debug-dir $PYPERF_SID_DEBUG")
    args = " \\\n".join(" *\t%s" % a for a in args)
    body = []
    for interp, values, owners in layouts:
        body += render_entry(interp, values, owners)
    return (HEADER % {"files": files, "args": args, "debug": SID_DEBUG_NOTE}
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
            ft = int(cur.get("free_threaded", "0"))
            entries[(h >> 24, h >> 16 & 0xff, ft)] = cur
            cur = None
        else:
            m = re.match(r"\t+\.(\w+) = (.*),$", line)
            if m:
                cur[group + m.group(1)] = m.group(2).strip('"')
    return entries


def version_key(path):
    """Sort 3.6 before 3.10: by the numbers in the path, not its text."""
    return [int(n) if n.isdigit() else n for n in re.split(r"(\d+)", path)]


def find_sid(sid_root):
    """Debian sid's own interpreters in the suite's chroot: executables
    linked statically with libpython, stripped; their debug files come
    from python3.X-dbg of the same package version (--debug-dir)."""
    return [p for p in (os.path.join(sid_root, "usr", "bin", "python3.%d" % m)
                        for m in (14, 15)) if os.path.exists(p)]


def roots(args):
    """The directories the table's header names by a variable."""
    return [("PYENV_ROOT", args.pyenv_root), ("PYPERF_SID_ROOT", args.sid_root),
            ("PYPERF_FT_ROOT", args.ft_root)]


def find_ft(ft_root):
    """The free-threaded libpython3.Xt of each build under the FT root."""
    pattern = os.path.join(ft_root, "3.*t", "lib", "libpython3.*t.so")
    return sorted(glob.glob(pattern), key=version_key)


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
        interp = Interp(path, roots(args), args.debug_dir)
        values, owners = read_layout(interp)
        minor = (interp.major, interp.minor, interp.free_threaded)
        if minor in seen:
            raise GenError("two libraries for %d.%d%s: %s and %s; give one"
                           % (interp.major, interp.minor,
                              "t" if interp.free_threaded else "",
                              seen[minor], path))
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
        interp = Interp(path, roots(args), args.debug_dir)
        values, owners = read_layout(interp)
    except Skip as e:
        print("SKIP     %s: %s" % (path, e))
        return "skip", None
    except GenError as e:
        print("FAIL     %s" % e)
        return "bad", None
    entry = committed.get((interp.major, interp.minor, interp.free_threaded))
    label = "%-8s %s" % (interp.version, path)
    if entry is None:
        print("FAIL     %s: the table has no %d.%d%s entry"
              % (label, interp.major, interp.minor,
                 "t" if interp.free_threaded else ""))
        return "bad", None
    diffs = compare_entry(values, entry)
    if diffs:
        print("MISMATCH %s vs the %d.%d%s entry from %s:"
              % (label, interp.major, interp.minor,
                 "t" if interp.free_threaded else "", entry["source"]))
        for d in diffs:
            print("           " + d)
    else:
        print("OK       %s matches the %d.%d%s entry from %s"
              % (label, interp.major, interp.minor,
                 "t" if interp.free_threaded else "", entry["source"]))
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
    libs = args.libs or (find_libs(args.pyenv_root)
                         + find_sid(args.sid_root) + find_ft(args.ft_root))
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
    ap.add_argument("--debug-dir",
                    default=os.environ.get("PYPERF_SID_DEBUG") or None,
                    help="where separate debug files are found by build id"
                    " (DIR/.build-id/xx/yyyy.debug; default"
                    " $PYPERF_SID_DEBUG)")
    ap.add_argument("--sid-root",
                    default=os.environ.get("PYPERF_SID_ROOT")
                    or DEFAULT_SID_ROOT,
                    help="the Debian sid chroot whose python3.14 and"
                    " python3.15 --check also reads (default"
                    " $PYPERF_SID_ROOT or %s)" % DEFAULT_SID_ROOT)
    ap.add_argument("--ft-root",
                    default=os.environ.get("PYPERF_FT_ROOT") or DEFAULT_FT_ROOT,
                    help="where the free-threaded builds --check also reads"
                    " are (FT_ROOT/3.Xt/lib/libpython3.Xt.so; default"
                    " $PYPERF_FT_ROOT or %s)" % DEFAULT_FT_ROOT)
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
