/*
 * A C extension for the merge test: call_back(fn) is C that calls the
 * Python function fn; spin_c(n) is C that burns CPU. A Python function
 * passed to call_back that calls spin_c gives the stack (leaf first)
 * spin_c <- python <- call_back <- python: Python -> C -> Python -> C.
 * Builds against any CPython 3.6+ (one source, no version checks needed).
 */
#include <Python.h>

static volatile unsigned long sink;

/* noinline keeps the function a frame of its own in the native stack. */
static __attribute__((noinline)) unsigned long burn(long n)
{
	unsigned long x = 0;

	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + (unsigned long)i;
	return x;
}

static PyObject *spin_c(PyObject *self, PyObject *arg)
{
	long n = PyLong_AsLong(arg);

	if (n < 0 && PyErr_Occurred())
		return NULL;
	sink = burn(n);
	Py_RETURN_NONE;
}

static __attribute__((noinline)) PyObject *call_back(PyObject *self, PyObject *fn)
{
	PyObject *r = PyObject_CallObject(fn, NULL);

	sink++;		/* not a tail call: call_back stays on the stack */
	return r;
}

static PyMethodDef methods[] = {
	{ "spin_c", spin_c, METH_O, "burn CPU in C" },
	{ "call_back", call_back, METH_O, "call a Python function from C" },
	{ NULL, NULL, 0, NULL }
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "cbext", NULL, -1, methods };

PyMODINIT_FUNC PyInit_cbext(void)
{
	return PyModule_Create(&module);
}
