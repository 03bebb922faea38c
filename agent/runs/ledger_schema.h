// The ledger's schema, as migrations applied in order. Migration i (0-based) takes the schema
// from version i to i + 1; the version is SQLite's user_version, set in the same transaction.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace stagewatch {

// PRAGMA application_id of a stagewatch ledger ("SWLG"): tells it from other SQLite files.
inline constexpr int32_t kLedgerApplicationId = 0x53574c47;

const std::vector<std::string_view>& LedgerMigrations();

}  // namespace stagewatch
