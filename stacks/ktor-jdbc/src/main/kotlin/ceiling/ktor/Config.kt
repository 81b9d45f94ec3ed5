package ceiling.ktor

/**
 * Everything the server reads from its environment. The names are the benchmark contract's
 * (contract/API.md); defaults are for running by hand and documented in README.md.
 */
data class Config(
    val httpPort: Int,
    val dbHost: String,
    val dbPort: Int,
    val dbName: String,
    val dbUser: String,
    val dbPassword: String,
    val dbSslMode: String,
    /** DB_POOL_SIZE: HikariCP maximumPoolSize, and the parallelism of the JDBC dispatcher. */
    val poolSize: Int,
    /** WORKERS: Netty's worker (I/O) and call event-loop group sizes. */
    val workers: Int,
) {
    companion object {
        fun fromEnv(getenv: (String) -> String?): Config = Config(
            httpPort = envInt(getenv, "HTTP_PORT", 8080, 1..65535),
            dbHost = getenv("DB_HOST").orEmpty().ifEmpty { "127.0.0.1" },
            dbPort = envInt(getenv, "DB_PORT", 5432, 1..65535),
            dbName = getenv("DB_NAME").orEmpty().ifEmpty { "postgres" },
            dbUser = getenv("DB_USER").orEmpty().ifEmpty { "postgres" },
            dbPassword = getenv("DB_PASSWORD").orEmpty(),
            dbSslMode = getenv("DB_SSLMODE").orEmpty().ifEmpty { "disable" },
            poolSize = envInt(getenv, "DB_POOL_SIZE", 64, 1..10_000),
            workers = envInt(getenv, "WORKERS", Runtime.getRuntime().availableProcessors(), 1..1024),
        )

        private fun envInt(getenv: (String) -> String?, key: String, default: Int, range: IntRange): Int {
            val v = getenv(key)
            if (v.isNullOrEmpty()) return default
            val n = v.toIntOrNull()
            require(n != null && n in range) { "$key=\"$v\": want an integer in ${range.first}..${range.last}" }
            return n
        }
    }
}
