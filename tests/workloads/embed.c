/* Loads libpython at run time (argv[1]) and runs Python code (argv[2]):
 * an embedder that maps its interpreter after exec, as dlopen does. */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void *h;
	void (*init)(void);
	int (*run)(const char *);

	if (argc < 3)
		return 2;
	sleep(1);	/* mapped well after exec */
	h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		fprintf(stderr, "embed: %s\n", dlerror());
		return 1;
	}
	init = (void (*)(void))dlsym(h, "Py_Initialize");
	run = (int (*)(const char *))dlsym(h, "PyRun_SimpleString");
	if (!init || !run)
		return 1;
	init();
	return run(argv[2]) ? 1 : 0;
}
