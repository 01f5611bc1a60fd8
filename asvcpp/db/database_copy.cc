// Database::CopyFrom: every table of one experiment database into another, between SQLite and
// PostgreSQL either way (`asvrun db copy`). The columns are listed here with their types, so that
// each value is bound as what it is (PostgreSQL checks parameter types; SQLite would accept any).
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/db/connection.h"
#include "asvcpp/db/database.h"
#include "asvcpp/db/schema.h"
#include "asvcpp/db/statement.h"

namespace asv::db {
namespace {

enum class Type { kInt, kReal, kText };

struct Column {
  const char* name;
  Type type;
};

struct Table {
  const char* name;
  bool has_id;  // an id column with an identity sequence on PostgreSQL
  std::vector<Column> columns;
};

// Every table of schema version 8 (schema.h) in an order that satisfies the foreign keys.
const std::vector<Table>& Tables() {
  constexpr Type I = Type::kInt;
  constexpr Type R = Type::kReal;
  constexpr Type T = Type::kText;
  static const std::vector<Table> tables = {
      {"runs", true, {{"id", I}, {"recipe", T}, {"config", T}, {"parent_chain", T}, {"settings_json", T},
                      {"settings_hash", T}, {"command_line", T}, {"host", T}, {"pid", I}, {"process_start", I},
                      {"boot_id", T}, {"pid_namespace", T}, {"gpu_ids", T}, {"world_size", I}, {"code_version", T},
                      {"output_folder", T}, {"status", T}, {"start_time", T}, {"end_time", T},
                      {"heartbeat_time", T}, {"error_text", T}, {"slurm_job_id", I}, {"slurm_array_task_id", I}}},
      {"stages", true, {{"id", I}, {"run_id", I}, {"stage", I}, {"name", T}, {"status", T}, {"start_time", T},
                        {"end_time", T}, {"error_text", T}}},
      {"epochs", true, {{"id", I}, {"run_id", I}, {"epoch", I}, {"loss", R}, {"accuracy", R},
                        {"learning_rate", R}, {"seconds", R}, {"frames_per_second", R}, {"val_loss", R},
                        {"val_accuracy", R}, {"recorded_time", T}, {"data_wait_percent", R}}},
      {"results", true, {{"id", I}, {"run_id", I}, {"epoch", I}, {"trial_list", T}, {"eer", R}, {"min_dcf", R},
                         {"p_target", R}, {"c_miss", R}, {"c_fa", R}, {"n_target", I}, {"n_nontarget", I},
                         {"recorded_time", T}, {"stage", I}, {"cllr", R}, {"min_cllr", R}}},
      {"result_costs", true, {{"id", I}, {"result_id", I}, {"p_target", R}, {"c_miss", R}, {"c_fa", R},
                              {"min_dcf", R}, {"act_dcf", R}}},
      {"artifacts", true, {{"id", I}, {"run_id", I}, {"stage_id", I}, {"path", T}, {"kind", T}, {"checksum", T},
                           {"bytes", I}, {"recorded_time", T}}},
      {"progress", false, {{"run_id", I}, {"rank", I}, {"stage", T}, {"what", T}, {"done", I}, {"total", I},
                           {"unit", T}, {"rate", R}, {"eta_seconds", R}, {"updated_time", T}}},
      {"slurm_jobs", false, {{"job_id", I}, {"recipe", T}, {"config", T}, {"output_folder", T},
                             {"output_file", T}, {"command_line", T}, {"submit_time", T}}},
  };
  return tables;
}

std::string ColumnList(const Table& table) {
  std::string list;
  for (const Column& column : table.columns) {
    if (!list.empty()) list += ", ";
    list += column.name;
  }
  return list;
}

// Copies every row of `table` from `from` to `to` (inside the caller's transactions); returns the
// number of rows. Moves a PostgreSQL target's id sequence past the copied ids.
std::int64_t CopyTable(Connection& from, Connection& to, const Table& table) {
  std::string placeholders;
  for (std::size_t i = 0; i < table.columns.size(); ++i) placeholders += fmt::format("{}?{}", i ? ", " : "", i + 1);
  Statement read(from, fmt::format("SELECT {} FROM {} ORDER BY {}", ColumnList(table), table.name,
                                   table.has_id ? "id" : table.columns[0].name));
  Statement write(to, fmt::format("INSERT INTO {} ({}) VALUES ({})", table.name, ColumnList(table), placeholders));
  std::int64_t rows = 0;
  while (read.Step()) {
    write.Reset();
    for (std::size_t i = 0; i < table.columns.size(); ++i) {
      const int col = static_cast<int>(i);
      if (read.IsNull(col)) {
        write.BindNull(col + 1);
      } else if (table.columns[i].type == Type::kInt) {
        write.Bind(col + 1, read.Int(col));
      } else if (table.columns[i].type == Type::kReal) {
        write.Bind(col + 1, read.Real(col));
      } else {
        write.Bind(col + 1, read.Text(col));
      }
    }
    write.Run();
    ++rows;
  }
  // New rows of the target get ids after the copied ones (SQLite picks max(id) + 1 itself).
  if (table.has_id && to.dialect().engine == Engine::kPostgres) {
    to.Exec(fmt::format("SELECT setval(pg_get_serial_sequence('{0}', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM {0}",
                        table.name));
  }
  return rows;
}

}  // namespace

std::vector<std::pair<std::string, std::int64_t>> Database::CopyFrom(Database& source, bool replace) {
  CheckOpen();
  source.CheckOpen();
  const int latest = LatestSchemaVersion();
  if (source.SchemaVersion() != latest || SchemaVersion() != latest) {
    throw DbError(fmt::format("experiment database copy from {} to {}: both must be at schema version {} (source {}, "
                              "target {}); open each once for writing with this asvcpp to upgrade it",
                              source.location_, location_, latest, source.SchemaVersion(), SchemaVersion()));
  }
  std::vector<std::pair<std::string, std::int64_t>> copied;
  // The source is read in one snapshot while the target is written in one transaction.
  source.Read("copy (read)", [&] {
    Write("copy", [&] {
      copied.clear();
      std::vector<std::string> held;
      for (const Table& table : Tables()) {
        Statement count(*conn_, fmt::format("SELECT count(*) FROM {}", table.name));
        const std::int64_t rows = count.Step() ? count.Int(0) : 0;
        if (rows > 0) held.push_back(fmt::format("{} {}", rows, table.name));
      }
      if (!held.empty() && !replace) {
        std::string listed;
        for (const std::string& h : held) listed += (listed.empty() ? "" : ", ") + h;
        throw DbError(fmt::format("the target is not empty ({}); refusing to copy into it (asvrun db copy "
                                  "--replace deletes its rows first)",
                                  listed));
      }
      if (!held.empty()) {
        for (auto table = Tables().rbegin(); table != Tables().rend(); ++table) {
          conn_->Exec(fmt::format("DELETE FROM {}", table->name));
        }
      }
      for (const Table& table : Tables()) {
        try {
          copied.emplace_back(table.name, CopyTable(*source.conn_, *conn_, table));
        } catch (const StatementError& e) {
          if (e.busy()) throw;  // Retry waits and copies again
          throw DbError(fmt::format("table {}: {}", table.name, e.what()));
        }
      }
    });
  });
  std::string summary;
  for (const auto& [table, rows] : copied) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", rows, table);
  ASV_LOG(Info, "experiment database {} copied into {}: {}", source.location_, location_, summary);
  return copied;
}

}  // namespace asv::db
