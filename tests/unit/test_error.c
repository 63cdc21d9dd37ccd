/* fpull_err_prefix: context in front, once (issue 23.7: "blob X: blob X:", "REF: REF is"). */
#include <string.h>

#include "fpull/error.h"
#include "harness.h"

#define D "sha256:9508d5863d32614794ac6c37c1791152491bb848c69ff3fb8bc992db0cdbff3b"

TEST(prefix_puts_context_in_front)
{
  fpull_err err = {0};
  fpull_err_set(&err, FPULL_ENET, "connection reset");
  CHECK_INT_EQ(fpull_err_prefix(&err, "layer %s", D), FPULL_ENET);
  CHECK_STR_EQ(err.msg, "layer " D ": connection reset");
}

TEST(prefix_naming_what_the_message_names_is_left_out)
{
  fpull_err err = {0};
  fpull_err_set(&err, FPULL_EINTEGRITY, "blob %s: digest mismatch", D);
  CHECK_INT_EQ(fpull_err_prefix(&err, "layer %s", D), FPULL_EINTEGRITY);
  CHECK_STR_EQ(err.msg, "blob " D ": digest mismatch");
  fpull_err_set(&err, FPULL_EUSAGE, "reg.example/a/b:v1 is an index");
  fpull_err_prefix(&err, "%s", "reg.example/a/b:v1");
  CHECK_STR_EQ(err.msg, "reg.example/a/b:v1 is an index");
  /* Short words are no names: "entry 3" before "entry 3 ..." is still prepended. */
  fpull_err_set(&err, FPULL_EFAIL, "bad 3");
  fpull_err_prefix(&err, "entry %d", 3);
  CHECK_STR_EQ(err.msg, "entry 3: bad 3");
}
