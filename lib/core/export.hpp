// The one export macro: libnnc.so is built with hidden visibility and a
// version script; exported functions are marked NNC_API and defined inside
// extern "C".
#pragma once
#define NNC_API __attribute__((visibility("default")))
