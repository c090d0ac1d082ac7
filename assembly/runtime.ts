// Runtime queries for the JS side.

/** First byte after the module's static data; the JS allocator manages memory from here on. */
export function heapBase(): usize {
  return __heap_base;
}
