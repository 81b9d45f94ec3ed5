package ceiling.spring.api;

/**
 * Body of {@code POST /status}. Boxed/String fields so that a missing field is seen as null and the
 * UUID is checked by {@link Inputs#uuid} (Jackson's UUID parser also accepts base64, the contract does not).
 */
public record CreateStatusRequest(String id, Integer status) {}
