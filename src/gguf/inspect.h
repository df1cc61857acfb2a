// Human-readable summary of a GGUF file, for `dllm inspect PATH`: header, every metadata key,
// tensor counts per ggml type, and the tensor directory. Architecture-agnostic.
#pragma once

#include <ostream>
#include <string>

#include "gguf/gguf.h"

namespace dllm::gguf {

/// Prints, in this order:
///   file, GGUF version, file size, alignment, tensor data offset;
///   every metadata key in file order: key, type (ARRAY[elem]) and value. Arrays show their count
///   and first few items; strings longer than 64 bytes are cut (at a UTF-8 boundary) and show
///   their byte count. Keys, string values and tensor names are printed through escape_text
///   (base/escape.h): control bytes, C1 controls and invalid UTF-8 appear as \n, \x1b, \u009b, \xff,
///   and a backslash as \\ (in values also '"' as \").
///   per ggml type: tensor count and bytes (sorted by type id), and the total;
///   every tensor in file order: index, name, type, shape in ggml order [ne0, ne1, ...] (ne0 is
///   the contiguous row length), bytes, absolute file offset.
/// Does not throw (the file was validated when opened).
void print_inspect(const GgufFile& file, std::ostream& out);

/// One metadata value as print_inspect shows it (exposed for tests and other printers).
std::string format_value(const Value& v);

}  // namespace dllm::gguf
