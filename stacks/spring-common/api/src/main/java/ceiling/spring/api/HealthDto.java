package ceiling.spring.api;

/** {@code {"status":"UP"}} or {@code {"status":"DOWN"}} for {@code GET /health}. */
public record HealthDto(String status) {
    public static final HealthDto UP = new HealthDto("UP");
    public static final HealthDto DOWN = new HealthDto("DOWN");
}
