/* assert for polycoal's C-subset reader (never compiled): the C library's C++ form
   spells `static_cast<bool>`, outside the C subset. Here a statement calling the
   function nvcc's device code and the C library both declare, so that the model sees a
   call of unknown effects (the kernel leaves the affine model; a rewrite keeps the
   text as written), NDEBUG or not: what is emitted keeps every assert. */
#undef assert
#define assert(e) if (!(e)) __assert_fail(#e, __FILE__, __LINE__, __func__)
