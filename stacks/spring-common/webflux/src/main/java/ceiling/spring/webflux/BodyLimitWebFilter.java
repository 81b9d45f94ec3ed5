package ceiling.spring.webflux;

import ceiling.spring.api.ApiException;
import ceiling.spring.api.Inputs;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Request bodies over 64 KiB get 413: a declared Content-Length is checked here, before anything is
 * read; a chunked body is stopped by the codec limit set in {@link CodecLimits}.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE)
public class BodyLimitWebFilter implements WebFilter {
    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        if (exchange.getRequest().getHeaders().getContentLength() > Inputs.MAX_BODY_BYTES) {
            return Mono.error(ApiException.payloadTooLarge());
        }
        return chain.filter(exchange);
    }
}
