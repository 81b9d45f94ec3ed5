package ceiling.spring.mvc;

import ceiling.spring.api.ApiException;
import ceiling.spring.api.Inputs;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Request bodies over 64 KiB get 413. A declared Content-Length is checked before anything is read;
 * a chunked body is counted while Jackson reads it, and the overflow surfaces as an
 * {@link ApiException} that {@link ApiErrorAdvice} turns into 413.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE)
public class BodyLimitFilter extends OncePerRequestFilter {
    private static final byte[] TOO_LARGE = ("{\"error\":\"payload_too_large\",\"message\":\"request body is larger than "
            + Inputs.MAX_BODY_BYTES + " bytes\"}").getBytes(StandardCharsets.UTF_8);

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        long length = request.getContentLengthLong();
        if (length > Inputs.MAX_BODY_BYTES) {
            response.setStatus(413);
            response.setContentType("application/json");
            response.setContentLength(TOO_LARGE.length);
            response.getOutputStream().write(TOO_LARGE);
            return;
        }
        if (length < 0 && request.getHeader("Transfer-Encoding") != null) {
            chain.doFilter(new Limited(request), response);
            return;
        }
        chain.doFilter(request, response);
    }

    private static final class Limited extends HttpServletRequestWrapper {
        private ServletInputStream stream;

        Limited(HttpServletRequest request) {
            super(request);
        }

        @Override
        public ServletInputStream getInputStream() throws IOException {
            if (stream == null) {
                stream = new CountingStream(super.getInputStream());
            }
            return stream;
        }
    }

    private static final class CountingStream extends ServletInputStream {
        private final ServletInputStream in;
        private long count;

        CountingStream(ServletInputStream in) {
            this.in = in;
        }

        private int counted(int n) {
            if (n > 0 && (count += n) > Inputs.MAX_BODY_BYTES) {
                throw ApiException.payloadTooLarge();
            }
            return n;
        }

        @Override
        public int read() throws IOException {
            int b = in.read();
            if (b >= 0) {
                counted(1);
            }
            return b;
        }

        @Override
        public int read(byte[] buf, int off, int len) throws IOException {
            return counted(in.read(buf, off, len));
        }

        @Override
        public boolean isFinished() {
            return in.isFinished();
        }

        @Override
        public boolean isReady() {
            return in.isReady();
        }

        @Override
        public void setReadListener(ReadListener listener) {
            in.setReadListener(listener);
        }
    }
}
