package ceiling.spring.webflux;

import ceiling.spring.api.Inputs;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.codec.ServerCodecConfigurer;
import org.springframework.web.reactive.config.WebFluxConfigurer;

/** Decoders buffer at most 64 KiB of a request body; more raises DataBufferLimitException (413). */
@Configuration(proxyBeanMethods = false)
public class CodecLimits implements WebFluxConfigurer {
    @Override
    public void configureHttpMessageCodecs(ServerCodecConfigurer configurer) {
        configurer.defaultCodecs().maxInMemorySize(Inputs.MAX_BODY_BYTES);
    }
}
