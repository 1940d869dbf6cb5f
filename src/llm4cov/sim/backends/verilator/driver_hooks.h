// Declarations of the Verilated runtime hooks that driver_main.cpp defines
// (force-included into every C++ file of the build; see driver_main.cpp).
#ifndef LLM4COV_DRIVER_HOOKS_H_
#define LLM4COV_DRIVER_HOOKS_H_
void vl_stop_maybe(const char* filename, int linenum, const char* hier, bool maybe);
#endif
