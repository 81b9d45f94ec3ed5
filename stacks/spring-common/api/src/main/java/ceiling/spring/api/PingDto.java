package ceiling.spring.api;

/** {@code {"ok":true,"message":"OK"}} (source 004). */
public record PingDto(boolean ok, String message) {
    public static final PingDto OK = new PingDto(true, "OK");
}
