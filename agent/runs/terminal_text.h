// Text from the ledger as it may go to a terminal. Commands, stage names, victims' comms and
// anomaly details come from other users and from processes; a control character among them
// (an escape sequence, a bell, a carriage return) would act on the reader's terminal.
#pragma once

#include <string>
#include <string_view>

namespace stagewatch {

// `text` with every control character shown as \xNN (each byte of it): C0 (newline and tab
// included: a line of output is one line), DEL, C1 (U+0080 to U+009F) and any byte that is not
// part of valid UTF-8 (a lone 0x9b is a C1 CSI to a terminal in 8-bit mode). Other UTF-8 and a
// backslash stay as they are.
std::string TerminalText(std::string_view text);

}  // namespace stagewatch
