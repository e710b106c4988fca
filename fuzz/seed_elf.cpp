// A tiny shared library: the plugin_elf target's seed, a real ELF shared
// object as this toolchain links it.
extern "C" int tessera_fuzz_seed_symbol() {
  return 42;
}
