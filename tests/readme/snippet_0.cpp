// README block 0: "The numerical language", a whole program (its main renamed).
#define main readme_snippet_0_main
#include "snippet_0.inc"
