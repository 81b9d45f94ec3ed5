package ceiling.spring.webfluxjpa;

import jakarta.annotation.PreDestroy;
import java.util.concurrent.Callable;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Runs blocking JPA (JDBC) work off the Netty event loops, on a bounded-elastic scheduler with as many
 * threads as the Hikari pool has connections (application.yml: ceiling.jdbc-scheduler.threads), so
 * no scheduler thread waits inside Hikari; excess work queues in the scheduler (Reactor's default
 * queue cap of 100000 tasks per thread). Source 003 used the shared Schedulers.boundedElastic()
 * (10 x CPUs threads); a pool-sized one is the usual production advice.
 */
@Component
public class Blocking {
    private final Scheduler scheduler;

    public Blocking(@Value("${ceiling.jdbc-scheduler.threads}") int threads) {
        this.scheduler = Schedulers.newBoundedElastic(threads, Schedulers.DEFAULT_BOUNDED_ELASTIC_QUEUESIZE, "jdbc");
    }

    public <T> Mono<T> call(Callable<T> work) {
        return Mono.fromCallable(work).subscribeOn(scheduler);
    }

    @PreDestroy
    void dispose() {
        scheduler.dispose();
    }
}
