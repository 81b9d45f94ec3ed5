package ceiling.helidon;

import io.helidon.config.Config;

/**
 * Everything the server reads from its environment, through Helidon Config (whose default sources
 * are the environment variables and system properties). The names are the benchmark contract's
 * (contract/API.md); defaults are for running by hand.
 *
 * @param poolSize DB_POOL_SIZE: HikariCP maximumPoolSize = minimumIdle (a fixed-size pool)
 * @param workers  WORKERS: not read by the server; run.sh maps it to the virtual-thread scheduler's
 *                 parallelism (its carrier threads), recorded here for the startup log
 * @param ordersId ORDERS_ID: "include" (default, the contract) or "omit": GET /orders rows without
 *                 {@code id}, source 002's Níma payload (a variant plan sets it; breaks the contract)
 */
record AppConfig(
        int httpPort,
        String dbHost,
        int dbPort,
        String dbName,
        String dbUser,
        String dbPassword,
        String dbSslMode,
        int poolSize,
        int workers,
        boolean ordersId) {

    static AppConfig from(Config config) {
        return new AppConfig(
                intValue(config, "HTTP_PORT", 8080, 1, 65535),
                string(config, "DB_HOST", "127.0.0.1"),
                intValue(config, "DB_PORT", 5432, 1, 65535),
                string(config, "DB_NAME", "postgres"),
                string(config, "DB_USER", "postgres"),
                config.get("DB_PASSWORD").asString().orElse(""),
                string(config, "DB_SSLMODE", "disable"),
                intValue(config, "DB_POOL_SIZE", 100, 1, 10_000),
                intValue(config, "WORKERS", Runtime.getRuntime().availableProcessors(), 1, 1024),
                ordersId(config));
    }

    private static boolean ordersId(Config config) {
        String v = config.get("ORDERS_ID").asString().orElse("");
        return switch (v) {
            case "", "include" -> true;
            case "omit" -> false;
            default -> throw new IllegalArgumentException("ORDERS_ID=\"" + v + "\": want include or omit");
        };
    }

    private static String string(Config config, String key, String fallback) {
        String v = config.get(key).asString().orElse("");
        return v.isEmpty() ? fallback : v;
    }

    private static int intValue(Config config, String key, int fallback, int min, int max) {
        String v = config.get(key).asString().orElse("");
        if (v.isEmpty()) {
            return fallback;
        }
        try {
            int n = Integer.parseInt(v);
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new IllegalArgumentException(key + "=\"" + v + "\": want an integer in " + min + ".." + max);
    }
}
