// Pure-logic tests link the model's libraries, and so SystemC, whose shared library defines main
// and calls sc_main: gtest_main provides main here, and this sc_main, never called, satisfies the
// linker when the SystemC library is kept (e.g. in the sanitizer build).
extern "C" int sc_main(int, char*[]) {
    return 1;
}
