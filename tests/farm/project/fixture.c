/* The farm fixture's library: the generated launchers are not built (see CMakeLists.txt). */
int kt_farm_fixture(void) { return 0; }
