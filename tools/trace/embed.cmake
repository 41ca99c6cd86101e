# Turns the viewer page into a C array, so pto-trace carries it and the
# pages it writes need nothing else. cmake -DIN=viewer.html -DOUT=x.c -P
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}"
  "/* generated from tools/trace/viewer.html by embed.cmake */\n"
  "static const unsigned char bytes[] = {${bytes}0x00};\n"
  "const char *const pto_trace_viewer = (const char *)bytes;\n"
  "const unsigned long pto_trace_viewer_len = sizeof bytes - 1;\n")
