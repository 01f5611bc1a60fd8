// Where an experiment database is: the path of an SQLite file, or a libpq connection URI of a
// database on a PostgreSQL server (postgresql://user@host:port/dbname). Database (database.h)
// opens either; these tell them apart and name a URI in messages without its password.
#pragma once

#include <string>
#include <string_view>

namespace asv::db {

/// True when `location` is a libpq connection URI ("postgresql://..." or "postgres://...") rather
/// than the path of an SQLite file.
bool IsPostgresUri(std::string_view location);

/// `location` with the password of a URI (the "user:password@" form and a "password=" parameter)
/// replaced by "***", for messages and logs; a file path unchanged.
std::string RedactPassword(std::string_view location);

}  // namespace asv::db
